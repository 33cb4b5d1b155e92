"""Text Conveyor writes into Markdown: escaping and short digests."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from bot.text import (
    error_text,
    escape_markdown,
    format_minute,
    format_time,
    one_line,
    short_digest,
    shortened,
    unescape_markdown,
    unlinked,
)

DIGEST = "sha256:" + "a" * 64


def test_escape_markdown_shows_text_as_written() -> None:
    assert escape_markdown("*bold* `code` [link](x) <b>|~_\\") == (
        "\\*bold\\* \\`code\\` \\[link\\](x) \\<b\\>\\|\\~\\_\\\\")


def test_escape_markdown_is_one_line() -> None:
    assert escape_markdown("a\n### b\r\n- c", mentions=True) == "a ### b - c"


def test_escape_markdown_breaks_mentions_and_references_by_default() -> None:
    assert escape_markdown("@alice see #12") == "@\u2060alice see #\u206012"
    assert escape_markdown("@alice see #12", mentions=True) == "@alice see #12"
    assert unlinked("@a#b") == "@\u2060a#\u2060b"


@given(st.text())
def test_unescape_returns_what_was_escaped(text: str) -> None:
    assert unescape_markdown(escape_markdown(text)) == one_line(text).replace("\u2060", "")


def test_short_digest() -> None:
    assert short_digest(DIGEST) == "sha256:aaaaaaaaaaaa"
    assert short_digest("sha512:" + "b" * 128) == "sha512:bbbbbbbbbbbb"
    assert short_digest("nodigest") == "nodigest"
    assert short_digest(None) == "—"
    assert short_digest("") == "—"


def test_format_time_is_utc() -> None:
    berlin = datetime(2026, 12, 18, 16, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    assert format_time(berlin) == "2026-12-18T15:00:00Z"


def test_shortened_is_one_line_within_the_limit() -> None:
    assert shortened("a\n b", 10) == "a b"
    assert shortened("x" * 11, 10) == "x" * 9 + "…"
    assert shortened("x" * 10, 10) == "x" * 10


def test_error_text() -> None:
    assert error_text(ValueError("bad\n  input")) == "bad input"
    assert error_text(ValueError("e" * 300)) == "e" * 200
    assert error_text(TimeoutError()) == "TimeoutError"


def test_format_minute_is_utc() -> None:
    berlin = datetime(2026, 12, 18, 16, 5, 59, tzinfo=ZoneInfo("Europe/Berlin"))
    assert format_minute(berlin) == "2026-12-18 15:05 UTC"
