"""Durations: parsing, formatting, bounds and the round trip."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.domain.durations import MAX_DURATION, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("0s", timedelta(0)),
        ("45s", timedelta(seconds=45)),
        ("30m", timedelta(minutes=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d", timedelta(days=2)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("90m", timedelta(minutes=90)),
        (" 5m ", timedelta(minutes=5)),
        ("30d", timedelta(days=30)),
    ],
)
def test_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "-5m", "5", "1.5h", "30 m", "1m1h", "1h1h", "h", "5M", "1w", "+5m", "0x"]
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_parse_bound() -> None:
    with pytest.raises(ValueError, match="longer than the maximum of 30d"):
        parse_duration("30d1s")
    with pytest.raises(ValueError, match="longer than the maximum"):
        parse_duration("99999999d")  # more digits than allowed: still a clean error
    with pytest.raises(ValueError, match="longer than the maximum"):
        parse_duration("999999999d999999999h", maximum=timedelta.max)
    assert parse_duration("2h", maximum=timedelta(hours=2)) == timedelta(hours=2)


def test_long_input_is_rejected_quickly() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("1" * 200_000)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=30), "30m"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(days=2), "2d"),
        (timedelta(days=1, seconds=1), "1d1s"),
        (timedelta(seconds=59, microseconds=999_999), "59s"),
        (timedelta(microseconds=1), "0s"),
        # a report timestamped before the merge it follows (clocks that disagree)
        (timedelta(seconds=-5), "0s"),
    ],
)
def test_format(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


@given(st.integers(0, int(MAX_DURATION.total_seconds())))
def test_round_trip(seconds: int) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value


@given(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=400)))
def test_format_is_canonical(value: timedelta) -> None:
    text = format_duration(value)
    assert parse_duration(text, maximum=timedelta(days=400)) == timedelta(
        days=value.days, seconds=value.seconds
    )
