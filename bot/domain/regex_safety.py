r"""Whether a `regexp:` tag policy is safe to run on any tag: short, and with no repetition
that can backtrack catastrophically.

Python's ``re`` backtracks and has no timeout, so a policy could stall the bot with a
pattern such as ``(a+)+$``. Patterns are checked on the parsed tree (re's own parser, which
has no public typed API) against these rules:

1. a repeated sub-pattern (max > 1) must not contain a quantifier of variable count,
   unless a mandatory character that the inner quantifiers cannot match separates the
   repetitions: ``(a+)+``, ``(a*)*``, ``(a?){3}`` are refused, ``(\d+\.){3}`` is not;
2. inside an unbounded repetition, the alternatives of a ``|`` must not be able to match
   the empty string or start with the same character: ``(a|aa)+``;
3. at most two unbounded quantifiers in a row may be able to match the same characters
   with nothing between them that only some of them can pass: ``.*-.*-.*`` is refused,
   ``.*-.*`` (quadratic at worst, on at most 128 characters) and ``\d+\.\d+\.\d+`` are not.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

MAX_PATTERN_LENGTH = 256

_PARSER: Any = importlib.import_module("re._parser")
_MAXREPEAT: int = _PARSER.MAXREPEAT
# Characters the analysis uses to decide whether two character sets overlap: ASCII plus a
# few representatives of the Unicode letters, digits and spaces that \w, \d and \s accept.
_UNIVERSE: frozenset[int] = frozenset([*range(128), 0xE9, 0x3B1, 0x660, 0x2003])
_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_GROUPS = ("SUBPATTERN", "ATOMIC_GROUP")


def _group_body(name: str, arg: Any) -> list[Any]:
    """The items of a group: a capturing group's come last in (group, flags, flags, items),
    an atomic group's `(?>...)` are its argument."""
    return list(arg) if name == "ATOMIC_GROUP" else list(arg[-1])


def _category(name: str, code: int) -> bool:
    char = chr(code)
    if name.endswith("DIGIT"):
        result = char.isdecimal()
    elif name.endswith("WORD"):
        result = char.isalnum() or char == "_"
    elif name.endswith("SPACE"):
        result = char.isspace()
    else:
        return True
    return not result if "NOT_" in name else result


def _class_set(items: list[Any]) -> frozenset[int]:
    chars: set[int] = set()
    negate = False
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(arg)
        elif name == "RANGE":
            chars.update(c for c in _UNIVERSE if arg[0] <= c <= arg[1])
            chars.update({arg[0], arg[1]})
        elif name == "CATEGORY":
            chars.update(c for c in _UNIVERSE if _category(str(arg), c))
        else:
            chars.update(_UNIVERSE)
    return frozenset(_UNIVERSE - chars) if negate else frozenset(chars)


def _first(seq: list[Any]) -> tuple[frozenset[int], bool]:
    """Characters a sequence can start with, and whether it can match the empty string."""
    first: set[int] = set()
    for op, arg in seq:
        chars, nullable = _item_first(str(op), arg)
        first |= chars
        if not nullable:
            return frozenset(first), False
    return frozenset(first), True


def _item_first(name: str, arg: Any) -> tuple[frozenset[int], bool]:
    if name == "LITERAL":
        return frozenset({arg}), False
    if name == "NOT_LITERAL":
        return _UNIVERSE - {arg}, False
    if name == "ANY":
        return _UNIVERSE, False
    if name == "IN":
        return _class_set(arg), False
    if name in ("AT", "ASSERT", "ASSERT_NOT"):
        return frozenset(), True
    if name in _REPEATS:
        chars, nullable = _first(arg[2])
        return chars, nullable or arg[0] == 0
    if name in _GROUPS:
        return _first(_group_body(name, arg))
    if name == "BRANCH":
        results = [_first(alt) for alt in arg[1]]
        return frozenset().union(*(r[0] for r in results)), any(r[1] for r in results)
    # back-references and conditionals: assume the worst
    return _UNIVERSE, True


def _children(name: str, arg: Any) -> list[list[Any]]:
    if name in _REPEATS:
        return [arg[2]]
    if name in _GROUPS:
        return [_group_body(name, arg)]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [arg[1]]
    if name == "BRANCH":
        return list(arg[1])
    if name == "GROUPREF_EXISTS":
        return [branch for branch in arg[1:] if branch is not None]
    return []


def _walk(seq: list[Any]) -> list[tuple[str, Any]]:
    nodes: list[tuple[str, Any]] = []
    for op, arg in seq:
        nodes.append((str(op), arg))
        for child in _children(str(op), arg):
            nodes.extend(_walk(child))
    return nodes


def _consumed(seq: list[Any]) -> frozenset[int]:
    """Every character some part of the sequence could consume."""
    chars: set[int] = set()
    for name, arg in _walk(seq):
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            chars |= _item_first(name, arg)[0]
        elif name in ("GROUPREF", "GROUPREF_IGNORE", "GROUPREF_EXISTS"):
            chars |= _UNIVERSE
    return frozenset(chars)


def _alternatives_overlap(alternatives: list[list[Any]]) -> bool:
    seen: set[int] = set()
    for chars, nullable in (_first(alt) for alt in alternatives):
        if nullable or seen & chars:
            return True
        seen |= chars
    return False


# A pending quantifier: the characters it can consume, and how many overlapping quantifiers
# end with it.
_Chain = tuple[frozenset[int], int]
_MAX_CHAIN = 2
_WIDE_SPAN = 16  # a bounded repetition with more freedom than this counts as unbounded


class _AmbiguousChain(Exception):
    pass


def _merge_chains(chains: list[_Chain]) -> list[_Chain]:
    best: dict[frozenset[int], int] = {}
    for chars, length in chains:
        best[chars] = max(length, best.get(chars, 0))
    return list(best.items())


def _seq_chains(seq: list[Any], pending: list[_Chain], limit: int, strict: bool) -> list[_Chain]:
    for op, arg in seq:
        pending = _item_chains(str(op), arg, pending, limit, strict)
    return pending


def _item_chains(
    name: str, arg: Any, pending: list[_Chain], limit: int, strict: bool
) -> list[_Chain]:
    """Follow which quantifiers could still be consuming input after this item.

    Counted are unbounded (or widely bounded) quantifiers, and in ``strict`` mode every
    quantifier of variable count; a chain longer than ``limit`` is ambiguous.
    """
    if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
        chars = _item_first(name, arg)[0]
        # a quantifier that cannot consume this mandatory character cannot reach past it
        return [(p, n) for p, n in pending if p & chars]
    if name in _GROUPS:
        return _seq_chains(_group_body(name, arg), pending, limit, strict)
    if name == "BRANCH":
        alternatives = [_seq_chains(alt, pending, limit, strict) for alt in arg[1]]
        return _merge_chains([chain for result in alternatives for chain in result])
    if name not in _REPEATS:
        return pending  # anchors, lookarounds, back-references
    low, high, body = arg
    wide = high == _MAXREPEAT or high - low > _WIDE_SPAN
    if not wide and not (strict and low != high):
        after = pending
        for _ in range(min(high, 2)):
            after = _seq_chains(body, after, limit, strict)
        return _merge_chains(after + pending) if low == 0 else after
    chars = _consumed(body)
    length = 1 + max((n for p, n in pending if p & chars), default=0)
    if length > limit:
        raise _AmbiguousChain
    _seq_chains(body, [], limit, strict)
    kept = pending if low == 0 else [(p, n) for p, n in pending if p & chars]
    return _merge_chains([*kept, (chars, length)])


def _ambiguous(seq: list[Any], limit: int, strict: bool) -> bool:
    try:
        _seq_chains(seq, [], limit, strict)
    except _AmbiguousChain:
        return True
    return False


def _check_nesting(seq: list[Any]) -> str | None:
    for name, arg in _walk(seq):
        if name not in _REPEATS or arg[1] <= 1:
            continue
        body = arg[2]
        variable = any(n in _REPEATS and a[0] != a[1] for n, a in _walk(body))
        # Two iterations back to back must split the input in only one way; otherwise the
        # number of ways multiplies with every repetition.
        if variable and _ambiguous([*body, *body], 1, True):
            return "nested quantifiers (such as (a+)+ or (a*)*)"
        if arg[1] == _MAXREPEAT:
            for inner_name, inner_arg in _walk(body):
                if inner_name == "BRANCH" and _alternatives_overlap(inner_arg[1]):
                    return "repeated alternatives that can match the same text (such as (a|aa)+)"
    return None


def _check_chains(seq: list[Any]) -> str | None:
    if _ambiguous(seq, _MAX_CHAIN, False):
        return (
            "more than two unbounded quantifiers in a row that can match the same characters "
            "(such as .*-.*-.*)"
        )
    return None


def check_regex_safety(pattern: str) -> None:
    """Raise ValueError for patterns that are too long or risk catastrophic backtracking."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"regular expression is longer than {MAX_PATTERN_LENGTH} characters")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            tree = list(_PARSER.parse(pattern))
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    problem = _check_nesting(tree) or _check_chains(tree)
    if problem is not None:
        raise ValueError(
            f"regular expression {pattern!r} risks catastrophic backtracking: {problem}"
        )
