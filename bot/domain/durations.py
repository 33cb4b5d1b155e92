"""Durations as written in the policy file: ``0``, ``45s``, ``30m``, ``1h30m``, ``2d``."""

from __future__ import annotations

import re
from datetime import timedelta

MAX_DURATION = timedelta(days=30)

_UNITS: tuple[tuple[str, int], ...] = (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1))
# Units in descending order, each at most once; up to 7 digits per unit keeps ints small.
_DURATION_RE = re.compile(r"(?:(\d{1,7})d)?(?:(\d{1,7})h)?(?:(\d{1,7})m)?(?:(\d{1,7})s)?")


def parse_duration(text: str, maximum: timedelta = MAX_DURATION) -> timedelta:
    """Parse ``0`` or a sequence of ``<n>d``, ``<n>h``, ``<n>m``, ``<n>s`` (in that order)."""
    value = text.strip()
    if value == "0":
        return timedelta(0)
    match = _DURATION_RE.fullmatch(value)
    if not value or match is None or not any(match.groups()):
        raise ValueError(
            f"invalid duration {text!r}: use 0 or a number with units d, h, m, s "
            "in that order, such as 45s, 30m, 1h30m or 2d"
        )
    seconds = sum(
        int(group) * factor
        for group, (_, factor) in zip(match.groups(), _UNITS, strict=True)
        if group is not None
    )
    result = timedelta(seconds=seconds)
    if result > maximum:
        raise ValueError(
            f"duration {text!r} is longer than the maximum of {format_duration(maximum)}"
        )
    return result


def format_duration(value: timedelta) -> str:
    """Format as the policy file writes it (``1h30m``); fractions of a second are dropped."""
    if value < timedelta(0):
        raise ValueError(f"negative duration {value!r}")
    remaining = value.days * 86_400 + value.seconds
    if remaining == 0:
        return "0"
    parts: list[str] = []
    for unit, factor in _UNITS:
        count, remaining = divmod(remaining, factor)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
