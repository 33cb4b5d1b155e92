"""Freeze windows: parsing, week wrap, DST transitions, date ranges and chaining."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.freeze import FreezeWindow, freeze_status, parse_freeze

BERLIN = ZoneInfo("Europe/Berlin")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


WEEKEND = parse_freeze("Fri 16:00 - Mon 08:00 Europe/Berlin")


@pytest.mark.parametrize(
    ("now", "until"),
    [
        ("2026-11-27 14:59", None),  # Fri 15:59 CET
        ("2026-11-27 15:00", "2026-11-30 07:00"),  # Fri 16:00 CET: start is inclusive
        ("2026-11-29 12:00", "2026-11-30 07:00"),  # Sunday
        ("2026-11-30 06:59", "2026-11-30 07:00"),
        ("2026-11-30 07:00", None),  # Mon 08:00 CET: end is exclusive
        ("2026-12-02 12:00", None),  # Wednesday
        # spring forward (2026-03-29): opens 16:00 CET, closes 08:00 CEST
        ("2026-03-27 15:00", "2026-03-30 06:00"),
        ("2026-03-28 12:00", "2026-03-30 06:00"),
        ("2026-03-30 05:59", "2026-03-30 06:00"),
        ("2026-03-30 06:00", None),
        # fall back (2026-10-25): opens 16:00 CEST, closes 08:00 CET
        ("2026-10-23 13:59", None),
        ("2026-10-23 14:00", "2026-10-26 07:00"),
        ("2026-10-25 00:30", "2026-10-26 07:00"),
        ("2026-10-26 07:00", None),
    ],
)
def test_weekly_window_in_berlin(now: str, until: str | None) -> None:
    result = WEEKEND.open_until(utc(now))
    assert result == (utc(until) if until else None)
    if result is not None:
        assert result.tzinfo is not None
        assert result.astimezone(BERLIN).strftime("%a %H:%M") == "Mon 08:00"


@pytest.mark.parametrize(
    ("now", "opening"),
    [
        ("2026-11-27 14:59", "2026-11-27 15:00"),
        ("2026-11-27 15:00", "2026-12-04 15:00"),  # open now: the following opening
        ("2026-03-23 12:00", "2026-03-27 15:00"),  # before spring forward: CET
        ("2026-03-30 06:00", "2026-04-03 14:00"),  # after: CEST
    ],
)
def test_weekly_next_opening(now: str, opening: str) -> None:
    assert WEEKEND.next_opening(utc(now)) == utc(opening)


def test_end_in_skipped_hour_closes_at_the_transition() -> None:
    window = parse_freeze("Sat 12:00 - Sun 02:30 Europe/Berlin")
    # 02:30 does not exist on 2026-03-29: clocks jump from 02:00 CET to 03:00 CEST (01:00 UTC)
    assert window.open_until(utc("2026-03-28 23:00")) == utc("2026-03-29 01:00")
    assert window.open_until(utc("2026-03-29 01:00")) is None
    assert window.open_until(utc("2026-03-29 00:59:59")) == utc("2026-03-29 01:00")


def test_start_in_repeated_hour_uses_first_occurrence() -> None:
    window = parse_freeze("Sun 02:30 - Sun 04:00 Europe/Berlin")
    # 02:30 happens twice on 2026-10-25: first at 00:30 UTC (CEST), again at 01:30 UTC (CET)
    assert window.open_until(utc("2026-10-25 00:29")) is None
    assert window.next_opening(utc("2026-10-25 00:29")) == utc("2026-10-25 00:30")
    assert window.open_until(utc("2026-10-25 00:30")) == utc("2026-10-25 03:00")
    assert window.open_until(utc("2026-10-25 01:45")) == utc("2026-10-25 03:00")


def test_new_york_dst() -> None:
    window = parse_freeze("Sat 00:00 - Mon 00:00 America/New_York")
    # 2026-03-08: clocks go forward in New York; the window is 47 hours long
    opens = window.next_opening(utc("2026-03-06 12:00"))
    assert opens == utc("2026-03-07 05:00")
    assert window.open_until(utc("2026-03-07 05:00")) == utc("2026-03-09 04:00")


@pytest.mark.parametrize(
    ("text", "now", "until"),
    [
        ("Sun 22:00 - Mon 02:00", "2026-11-29 23:00", "2026-11-30 02:00"),  # wraps into Monday
        ("Sun 22:00 - Mon 02:00", "2026-11-30 01:00", "2026-11-30 02:00"),
        ("Sun 22:00 - Mon 02:00", "2026-11-30 03:00", None),
        ("Fri 08:00 - Fri 06:00", "2026-11-27 07:00", None),  # six days and 22 hours
        ("Fri 08:00 - Fri 06:00", "2026-11-26 07:00", "2026-11-27 06:00"),
        ("Fri 08:00 - Fri 06:00", "2026-11-27 08:00", "2026-12-04 06:00"),
        ("mon 09:00 - monday 17:30", "2026-11-30 12:00", "2026-11-30 17:30"),
        ("Wed 09:00 - Wed 10:00 UTC", "2026-12-02 09:30", "2026-12-02 10:00"),
    ],
)
def test_week_wrap_utc(text: str, now: str, until: str | None) -> None:
    assert parse_freeze(text).open_until(utc(now)) == (utc(until) if until else None)


def test_date_range_utc() -> None:
    window = parse_freeze("2026-12-20 - 2027-01-04")
    assert window.open_until(utc("2026-12-19 23:59:59")) is None
    assert window.next_opening(utc("2026-12-19 23:59:59")) == utc("2026-12-20 00:00")
    assert window.open_until(utc("2026-12-20 00:00")) == utc("2027-01-05 00:00")
    assert window.open_until(utc("2027-01-04 23:59")) == utc("2027-01-05 00:00")
    assert window.open_until(utc("2027-01-05 00:00")) is None
    assert window.next_opening(utc("2027-01-05 00:00")) is None
    assert window.next_opening(utc("2026-12-24 00:00")) is None


def test_date_range_with_zone() -> None:
    window = parse_freeze("2026-12-20 - 2027-01-04 Europe/Berlin")
    assert window.open_until(utc("2026-12-19 22:59")) is None
    assert window.open_until(utc("2026-12-19 23:00")) == utc("2027-01-04 23:00")


def test_single_day_range() -> None:
    window = parse_freeze("2026-03-29 - 2026-03-29 Europe/Berlin")  # a 23-hour day
    assert window.open_until(utc("2026-03-29 12:00")) == utc("2026-03-29 22:00")
    assert window.next_opening(utc("2026-03-01 00:00")) == utc("2026-03-28 23:00")


def test_freeze_status_chains_overlapping_windows() -> None:
    windows = [
        parse_freeze("Fri 16:00 - Mon 08:00 UTC"),
        parse_freeze("Mon 06:00 - Mon 12:00 UTC"),
        parse_freeze("Mon 12:00 - Mon 13:00 UTC"),  # adjoining counts too
        parse_freeze("Mon 14:00 - Mon 15:00 UTC"),  # a gap: not chained
    ]
    assert freeze_status(windows, utc("2026-11-28 10:00")) == utc("2026-11-30 13:00")
    assert freeze_status(windows, utc("2026-11-30 13:30")) is None
    assert freeze_status(windows, utc("2026-11-30 14:30")) == utc("2026-11-30 15:00")
    assert freeze_status([], utc("2026-11-30 14:30")) is None


def test_freeze_status_mixes_dates_and_weeks() -> None:
    windows = [parse_freeze("2026-12-20 - 2026-12-27"), parse_freeze("Sun 12:00 - Tue 00:00")]
    assert freeze_status(windows, utc("2026-12-21 00:00")) == utc("2026-12-29 00:00")


def test_freeze_status_is_bounded_when_windows_cover_every_week() -> None:
    windows = [parse_freeze("Mon 00:00 - Thu 00:00"), parse_freeze("Wed 00:00 - Mon 00:00")]
    now = utc("2026-11-30 00:00")
    until = freeze_status(windows, now)
    assert until is not None and until - now > timedelta(days=400)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("weekends", "invalid freeze window 'weekends'"),
        ("Fri 16:00 - Mon 24:00", "invalid time '24:00'"),
        ("Fri 16:60 - Mon 08:00", "invalid time '16:60'"),
        ("Fry 16:00 - Mon 08:00", "unknown day 'Fry'"),
        ("Fri 16:00 - Mon 08:00 Europe/Nowhere", "unknown time zone 'Europe/Nowhere'"),
        ("Fri 16:00 - Mon 08:00 ../../etc/passwd", "unknown time zone"),
        ("Fri 16:00 - Fri 16:00", "starts and ends at the same time"),
        ("2027-01-04 - 2026-12-20", "ends before it starts"),
        ("2026-02-30 - 2026-03-01", "invalid date '2026-02-30'"),
        ("x" * 201, "longer than 200 characters"),
        ("9999-12-31 - 9999-12-31", "invalid date '9999-12-31': use a date between "
                                    "0001-01-02 and 9999-12-30"),
        ("0001-01-01 - 0001-01-02 Asia/Tokyo", "invalid date '0001-01-01'"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_freeze(text)


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Etc/GMT+12"])
def test_windows_at_the_ends_of_the_calendar_give_instants(zone: str) -> None:
    window = parse_freeze(f"0001-01-02 - 9999-12-30 {zone}")
    assert window.open_until(datetime(2026, 1, 1, tzinfo=UTC)) is not None
    assert window.next_opening(datetime(1, 1, 1, tzinfo=UTC)) is not None


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        WEEKEND.open_until(datetime(2026, 11, 27, 12, 0))


def test_str_is_the_normalised_text() -> None:
    assert str(parse_freeze("  Fri 16:00  -  Mon 08:00   Europe/Berlin ")) == (
        "Fri 16:00 - Mon 08:00 Europe/Berlin"
    )


WINDOWS = st.sampled_from(
    [
        "Fri 16:00 - Mon 08:00 Europe/Berlin",
        "Sat 12:00 - Sun 02:30 Europe/Berlin",
        "Sun 02:30 - Sun 04:00 Europe/Berlin",
        "Sat 23:00 - Sun 03:00 America/New_York",
        "Sun 01:30 - Sun 02:15 Australia/Lord_Howe",  # half-hour DST shift
        "Thu 08:00 - Thu 07:00 Asia/Kolkata",
    ]
)
INSTANTS = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
)


@given(WINDOWS, INSTANTS)
def test_window_edges_are_consistent(text: str, now: datetime) -> None:
    window: FreezeWindow = parse_freeze(text)
    second = timedelta(seconds=1)
    until = window.open_until(now)
    if until is not None:
        assert until > now
        assert window.open_until(until - second) == until
        assert window.open_until(until) is None
    opening = window.next_opening(now)
    assert opening is not None and opening > now
    assert window.open_until(opening) is not None
    assert window.open_until(opening - second) is None or until is not None
    assert opening - now <= timedelta(days=7, hours=1) + (until - now if until else timedelta(0))


@pytest.mark.parametrize(
    "text",
    [
        "Fri 16:00 - Mon 08:00 Europe/Berlin",
        "Sat 12:00 - Sun 02:30 Europe/Berlin",
        "Sun 02:30 - Sun 04:00 Europe/Berlin",
        "Sun 02:00 - Sun 03:00 Europe/Berlin",
    ],
)
@pytest.mark.parametrize("weekend", ["2026-03-28 12:00", "2026-10-24 12:00"])
def test_every_five_minutes_around_dst(text: str, weekend: str) -> None:
    window = parse_freeze(text)
    step = timedelta(minutes=5)
    now = utc(weekend)
    previous_open = window.open_until(now - step) is not None
    for _ in range(2 * 24 * 12):
        until = window.open_until(now)
        is_open = until is not None
        if is_open and not previous_open:
            assert window.next_opening(now - step) == now
        if until is not None:
            assert until > now and window.open_until(until) is None
        previous_open = is_open
        now += step


def test_window_inside_a_skipped_hour_never_opens_that_day() -> None:
    window = parse_freeze("Sun 02:00 - Sun 03:00 Europe/Berlin")
    assert window.open_until(utc("2026-03-29 00:59")) is None
    assert window.open_until(utc("2026-03-29 01:00")) is None
    assert window.next_opening(utc("2026-03-29 00:00")) == utc("2026-04-05 00:00")
