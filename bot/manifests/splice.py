"""Applying replacements at exact offsets, in one pass over the text."""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class Splice:
    """Replace ``text[start:end]`` with ``new``; ``start == end`` inserts."""

    start: int
    end: int
    new: str


def apply_splices(text: str, splices: list[Splice]) -> str:
    """Apply non-overlapping splices; insertions at one offset keep their given order."""
    ordered = sorted(enumerate(splices), key=lambda p: (p[1].start, p[1].end, p[0]))
    chunks: list[str] = []
    cursor = 0
    for _, splice in ordered:
        if splice.start < cursor:
            raise ValueError(f"overlapping splices at offset {splice.start}")
        chunks.append(text[cursor : splice.start])
        chunks.append(splice.new)
        cursor = splice.end
    chunks.append(text[cursor:])
    return "".join(chunks)


def changed_lines(new_text_line_starts: list[int], splices: list[Splice]) -> tuple[int, ...]:
    """1-based lines of the new text that hold replaced or inserted characters."""
    lines: set[int] = set()
    delta = 0
    for splice in sorted(splices, key=lambda s: (s.start, s.end)):
        begin = splice.start + delta
        new = splice.new
        stripped = new.lstrip("\r\n")
        begin += len(new) - len(stripped)
        end = begin + max(len(stripped) - 1, 0)
        first = bisect.bisect_right(new_text_line_starts, begin)
        last = bisect.bisect_right(new_text_line_starts, end)
        lines.update(range(first, last + 1))
        delta += len(new) - (splice.end - splice.start)
    return tuple(sorted(lines))
