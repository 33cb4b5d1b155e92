"""Which lines of a comment are commands.

A command is a line that starts with ``/`` followed by a word (a letter, then letters, digits,
``-`` or ``_``) and then whitespace or the end of the line; up to 3 leading spaces are allowed,
as in Markdown. Lines inside fenced code blocks (```` ``` ```` / ``~~~``), indented code (4
columns or more), block quotes (``>``) and HTML comments are never commands, so quoting a
command in a reply or a code sample does not run it. Text like ``/usr/bin/env`` or ``/ path``
is not a command; ``/shrug`` is one (an unknown one: it gets the help text, never silence).
"""

from __future__ import annotations

import re

MAX_BODY_BYTES = 64 * 1024

COMMAND_RE = re.compile(r"/([A-Za-z][A-Za-z0-9_-]*)[.,;:!?]*(?=\s|$)")
_FENCE_RE = re.compile(r"(`{3,}|~{3,})(.*)")
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


def bounded(body: str) -> str:
    """The body cut to `MAX_BODY_BYTES`, at the end of the last whole line."""
    encoded = body.encode("utf-8")
    if len(encoded) <= MAX_BODY_BYTES:
        return body
    cut = encoded[:MAX_BODY_BYTES].decode("utf-8", "ignore")
    # The last line is cut short: "/promote web 1.4.2" could have become "/promote web 1.4".
    return "\n".join(_NEWLINE_RE.split(cut)[:-1])


def _indent(line: str) -> tuple[int, str]:
    """Leading whitespace as Markdown columns (a tab reaches the next multiple of 4)."""
    columns = 0
    for position, char in enumerate(line):
        if char == " ":
            columns += 1
        elif char == "\t":
            columns += 4 - columns % 4
        else:
            return columns, line[position:]
    return columns, ""


def command_lines(body: str) -> list[tuple[int, str]]:
    """``(line number, stripped line)`` of each line that is a command, outside code and quotes."""
    found: list[tuple[int, str]] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    in_html_comment = False
    for number, line in enumerate(_NEWLINE_RE.split(body), start=1):
        columns, text = _indent(line)
        if fence is not None:
            closing = _FENCE_RE.fullmatch(text.rstrip())
            if (
                columns < 4
                and closing
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and not closing.group(2).strip()
            ):
                fence = None
            continue
        if in_html_comment:
            in_html_comment = "-->" not in line
            continue
        if columns >= 4:
            continue
        opening = _FENCE_RE.fullmatch(text)
        # A backtick fence's info string cannot hold a backtick (that is inline code).
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence = opening.group(1)
            continue
        if text.startswith("<!--"):
            in_html_comment = "-->" not in text[4:]
            continue
        if COMMAND_RE.match(text):
            found.append((number, text.strip()))
    return found
