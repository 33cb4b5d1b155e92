"""Durations as written in the policy file: ``0``, ``45s``, ``30m``, ``1h30m``, ``2d``."""

from __future__ import annotations

import re
from datetime import timedelta

MAX_DURATION = timedelta(days=30)

_UNITS: tuple[tuple[str, int], ...] = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))
# Units in descending order, each at most once.
_DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_MAX_DIGITS = 9  # beyond any sensible maximum; keeps int() away from huge digit strings
_MAX_TEXT = 64


def parse_duration(text: str, maximum: timedelta = MAX_DURATION) -> timedelta:
    """Parse ``0`` or a sequence of ``<n>d``, ``<n>h``, ``<n>m``, ``<n>s`` (in that order)."""
    value = text.strip()
    if value == "0":
        return timedelta(0)
    match = _DURATION_RE.fullmatch(value) if len(value) <= _MAX_TEXT else None
    if not value or match is None or not any(match.groups()):
        raise ValueError(
            f"invalid duration {text!r}: use 0 or a number with units d, h, m, s "
            "in that order, such as 45s, 30m, 1h30m or 2d"
        )
    if any(group is not None and len(group) > _MAX_DIGITS for group in match.groups()):
        seconds = int(maximum.total_seconds()) + 1
    else:
        seconds = sum(
            int(group) * factor
            for group, (_, factor) in zip(match.groups(), _UNITS, strict=True)
            if group is not None
        )
    if seconds > maximum.total_seconds():
        raise ValueError(
            f"duration {text!r} is longer than the maximum of {format_duration(maximum)}"
        )
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """Format as the policy file writes it (``45s``, ``1h30m``, ``2d``); fractions of a second
    are dropped, and zero or less (clocks that disagree) is ``0s``."""
    remaining = max(0, value.days * 86_400 + value.seconds)
    if remaining == 0:
        return "0s"
    parts: list[str] = []
    for unit, factor in _UNITS:
        count, remaining = divmod(remaining, factor)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
