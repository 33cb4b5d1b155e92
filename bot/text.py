"""Text Conveyor writes on GitHub: user and GitHub text inside Markdown, times, short digests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

# Characters that start Markdown formatting, links, HTML or table cells in GitHub's renderer.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
_ESCAPED = re.compile(r"\\([\\`*_\[\]<>|~])")
# U+2060 between `@` or `#` and a name keeps the text readable, but GitHub no longer sees an
# @-mention (no notification) or a #-reference (no link, no cross-reference).
_WORD_JOINER = "\u2060"
NOTHING = "—"


def one_line(text: str) -> str:
    """`text` with every run of whitespace, line breaks included, as one space."""
    return " ".join(text.split())


def shortened(text: str, limit: int) -> str:
    """`text` on one line of at most `limit` characters, ending in ``…`` when it was cut."""
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def error_text(exc: BaseException) -> str:
    """What an exception says, on one line of at most 200 characters; its type's name when it
    says nothing."""
    return one_line(str(exc))[:200] or type(exc).__name__


def unlinked(text: str) -> str:
    """`text` with its @-mentions and #-references broken: they neither notify nor link."""
    return text.replace("@", "@" + _WORD_JOINER).replace("#", "#" + _WORD_JOINER)


def escape_markdown(text: str, *, mentions: bool = False) -> str:
    """`text` as one line of Markdown that shows exactly as written: formatting, links and
    HTML characters escaped, and @-mentions and #-references broken unless `mentions`."""
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text))
    return escaped if mentions else unlinked(escaped)


def unescape_markdown(text: str) -> str:
    """The text :func:`escape_markdown` was given (on one line)."""
    return _ESCAPED.sub(r"\1", text.replace(_WORD_JOINER, ""))


def format_time(moment: datetime) -> str:
    """``2026-11-29T17:30:00Z``: UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_minute(moment: datetime) -> str:
    """``2026-11-29 17:30 UTC``: UTC, to the minute, for tables people read."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def short_digest(digest: str | None) -> str:
    """``sha256:`` and the first 12 hex digits, as branch names count them; ``—`` for none."""
    if not digest:
        return NOTHING
    algorithm, _, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:12]}" if hexdigits else digest


def join_names(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"
