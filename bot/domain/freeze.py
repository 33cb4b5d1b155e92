"""Freeze windows: periods in which a promotion gate never passes.

Weekly windows ``"Fri 16:00 - Mon 08:00 Europe/Berlin"`` repeat every week in local wall-clock
time; date windows ``"2026-12-20 - 2027-01-04 Europe/Berlin"`` cover whole days, both ends
included. The zone is optional (UTC). A window opens at the first instant the local clock
reads its start and closes at the first instant, after that, the clock reads its end: a
time skipped by a DST change resolves to the moment of the change, a repeated time to its
first occurrence. Instants are returned in UTC.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_FULL_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKLY_RE = re.compile(
    r"(?P<d1>[A-Za-z]{3,9})\s+(?P<t1>\d{1,2}:\d{2})\s*-\s*"
    r"(?P<d2>[A-Za-z]{3,9})\s+(?P<t2>\d{1,2}:\d{2})(?:\s+(?P<zone>\S+))?"
)
_DATES_RE = re.compile(
    r"(?P<start>\d{4}-\d{2}-\d{2})\s+-\s+(?P<end>\d{4}-\d{2}-\d{2})(?:\s+(?P<zone>\S+))?"
)
_MAX_TEXT = 200
_MAX_CHAIN = 1000
_MAX_CHAIN_SPAN = timedelta(days=400)


def _zone(name: str | None) -> ZoneInfo:
    if name is None:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name such as Europe/Berlin or UTC"
        ) from None


def _day(text: str) -> int:
    lowered = text.lower()
    if lowered in _DAYS:
        return _DAYS.index(lowered)
    if lowered in _FULL_DAYS:
        return _FULL_DAYS.index(lowered)
    raise ValueError(f"unknown day {text!r}: use Mon, Tue, Wed, Thu, Fri, Sat or Sun")


def _time(text: str) -> time:
    hours, minutes = (int(part) for part in text.split(":"))
    if hours > 23 or minutes > 59:
        raise ValueError(f"invalid time {text!r}: use 24-hour HH:MM between 00:00 and 23:59")
    return time(hours, minutes)


# A day's midnight, and the next one, must be instants in every zone.
_FIRST_DATE = date.min + timedelta(days=1)
_LAST_DATE = date.max - timedelta(days=1)


def _date(text: str) -> date:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"invalid date {text!r}: use YYYY-MM-DD") from None
    if not _FIRST_DATE <= day <= _LAST_DATE:
        raise ValueError(f"invalid date {text!r}: use a date between {_FIRST_DATE} and "
                         f"{_LAST_DATE}")
    return day


def first_instant(day: date, clock: time, zone: ZoneInfo) -> datetime:
    """The first instant (in UTC) at which the clock in ``zone`` reads ``day clock`` or later.

    Results are in UTC because an aware datetime in a repeated local hour never compares
    equal to one in another zone (PEP 495).
    """
    wall = datetime.combine(day, clock)
    candidate = wall.replace(tzinfo=zone).astimezone(UTC)
    if candidate.astimezone(zone).replace(tzinfo=None) == wall:
        return candidate  # fold=0: the first of two repeated readings
    # Skipped by a DST change: find the change itself between the two interpretations.
    low = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    high = candidate
    if low > high:
        low, high = high, low
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).replace(tzinfo=None) >= wall:
            high = middle
        else:
            low = middle
    return high.replace(microsecond=0)


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")


@dataclass(frozen=True)
class FreezeWindow:
    text: str
    zone: ZoneInfo
    # weekly windows: weekday (Mon=0) and time of start and end
    start_day: int | None = None
    start_time: time | None = None
    end_day: int | None = None
    end_time: time | None = None
    # date windows: first and last frozen day, inclusive
    first_date: date | None = None
    last_date: date | None = None

    @property
    def weekly(self) -> bool:
        return self.first_date is None

    def _occurrences(self, now: datetime) -> list[tuple[datetime, datetime]]:
        """(opens, closes) intervals that may contain ``now`` or follow it, in order."""
        if not self.weekly:
            assert self.first_date is not None and self.last_date is not None
            opens = first_instant(self.first_date, time(0), self.zone)
            closes = first_instant(self.last_date + timedelta(days=1), time(0), self.zone)
            return [(opens, closes)]
        assert self.start_day is not None and self.start_time is not None
        assert self.end_day is not None and self.end_time is not None
        local_today = now.astimezone(self.zone).date()
        span_days = (self.end_day - self.start_day) % 7
        if span_days == 0 and self.end_time <= self.start_time:
            span_days = 7
        this_week_start = local_today - timedelta(days=local_today.weekday() - self.start_day)
        result = []
        for weeks in (-2, -1, 0, 1):
            start_date = this_week_start + timedelta(weeks=weeks)
            result.append(
                (
                    first_instant(start_date, self.start_time, self.zone),
                    first_instant(start_date + timedelta(days=span_days), self.end_time, self.zone),
                )
            )
        return result

    def open_until(self, now: datetime) -> datetime | None:
        """When the window closes if it is open at ``now``, else None."""
        _require_aware(now)
        for opens, closes in self._occurrences(now):
            if opens <= now < closes:
                return closes
        return None

    def next_opening(self, now: datetime) -> datetime | None:
        """The next instant after ``now`` at which the window opens; None if it never will
        (a date window in the past or already running)."""
        _require_aware(now)
        for opens, closes in self._occurrences(now):
            if opens > now and closes > opens:  # a window inside a skipped hour is empty
                return opens
        if self.weekly:
            return self.next_opening(now + timedelta(days=7))
        return None

    def __str__(self) -> str:
        return self.text


def parse_freeze(text: str) -> FreezeWindow:
    if len(text) > _MAX_TEXT:
        raise ValueError(f"freeze window is longer than {_MAX_TEXT} characters")
    value = " ".join(text.split())
    dates = _DATES_RE.fullmatch(value)
    if dates is not None:
        first, last = _date(dates["start"]), _date(dates["end"])
        if last < first:
            raise ValueError(f"freeze window {text!r} ends before it starts")
        return FreezeWindow(value, _zone(dates["zone"]), first_date=first, last_date=last)
    weekly = _WEEKLY_RE.fullmatch(value)
    if weekly is None:
        raise ValueError(
            f'invalid freeze window {text!r}: use "Fri 16:00 - Mon 08:00 [Zone]" or '
            '"2026-12-20 - 2027-01-04 [Zone]"'
        )
    start_day, start_time = _day(weekly["d1"]), _time(weekly["t1"])
    end_day, end_time = _day(weekly["d2"]), _time(weekly["t2"])
    if (start_day, start_time) == (end_day, end_time):
        raise ValueError(f"freeze window {text!r} starts and ends at the same time")
    return FreezeWindow(
        value,
        _zone(weekly["zone"]),
        start_day=start_day,
        start_time=start_time,
        end_day=end_day,
        end_time=end_time,
    )


def freeze_status(windows: Iterable[FreezeWindow], now: datetime) -> datetime | None:
    """None if no window is open at ``now``; otherwise when the freeze ends, following
    windows that overlap or adjoin (one opens before or as another closes)."""
    _require_aware(now)
    pending = list(windows)
    until = now
    for _ in range(_MAX_CHAIN):
        closes = [c for c in (w.open_until(until) for w in pending) if c is not None]
        if not closes or until - now > _MAX_CHAIN_SPAN:
            break
        until = max(closes)
    return None if until == now else until
