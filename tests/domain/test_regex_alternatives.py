"""Repeated alternatives judged by the characters each can start with, through the constructs
an alternative may begin with: repeats, anchors, lookaheads, groups, branches, back-references."""

from __future__ import annotations

import pytest

from bot.domain.regex_safety import check_regex_safety

ALTERNATIVES = "repeated alternatives that can match the same text (such as (a|aa)+)"


@pytest.mark.parametrize("pattern", [
    r"(?:a*b|c)+",          # a repeat that may be empty: a or b, never c
    r"(?:(?=x)a|b)+",       # a lookahead consumes nothing: a, not b
    r"(?:(a)|b)+",          # a capturing group starts as its body
    r"(?:(?:a|b)c|d)+",     # a branch starts with any of its alternatives' starts
])
def test_alternatives_that_start_apart_are_safe(pattern: str) -> None:
    check_regex_safety(pattern)


@pytest.mark.parametrize("pattern", [
    r"(?:^a|a)+",           # an anchor consumes nothing: both start with a
    r"(?:x*a|a)+",          # the repeat may be empty: both may start with a
    r"(?:(?:ab|cd)|ax)+",   # the inner branch starts with a, as ax does
    r"(a)(?:\1|b)+",        # a back-reference may start with anything
])
def test_alternatives_that_may_start_alike_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError) as raised:
        check_regex_safety(pattern)
    assert str(raised.value).endswith(f"risks catastrophic backtracking: {ALTERNATIVES}")
