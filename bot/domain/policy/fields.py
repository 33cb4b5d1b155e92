"""Readers of the value kinds every section of the policy uses: one of a few choices, a bounded
list of strings, a path template, a tag policy, and the "did you mean" of a misspelt name."""

from __future__ import annotations

import difflib
from typing import Any

from bot.domain.policy.reader import Pos, Reader, type_name
from bot.domain.policy.syntax import path_problem, placeholder_problem
from bot.domain.tags import TagPolicy


def suggest(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_template(reader: Reader, pos: Pos, where: str, template: str) -> bool:
    problem = placeholder_problem(template) or path_problem(template)
    if problem is not None:
        reader.error(pos, f"{where}: {problem}")
        return False
    return True


def choice(
    reader: Reader, raw: dict[Any, Any], key: str, where: str, choices: tuple[str, ...]
) -> str | None:
    value = reader.typed(raw, key, str, "a string", where)
    if value is None:
        return None
    if value not in choices:
        reader.error(
            reader.value_pos(raw, key),
            f"{where}.{key}: must be one of {', '.join(choices)}, not {value!r}"
            + suggest(value, list(choices)),
        )
        return None
    return str(value)


def string_list(
    reader: Reader, raw: dict[Any, Any], key: str, where: str, limit: int
) -> list[tuple[str, Pos]]:
    seq = reader.typed(raw, key, list, "a list of strings", where)
    if seq is None:
        return []
    if len(seq) > limit:
        reader.error(reader.value_pos(raw, key), f"{where}.{key}: at most {limit} entries")
        return []
    items: list[tuple[str, Pos]] = []
    for index, item in enumerate(seq):
        pos = reader.item_pos(seq, index)
        if not isinstance(item, str):
            reader.error(pos, f"{where}.{key}[{index}]: expected a string, got {type_name(item)}")
        else:
            items.append((str(item), pos))
    return items


def parse_tags(
    reader: Reader, raw: dict[Any, Any], where: str, cache: dict[str, TagPolicy]
) -> TagPolicy | None:
    text = reader.typed(raw, "tags", str, 'a tag policy string such as "semver:^1.4"', where)
    if text is None:
        return None
    if text in cache:
        return cache[text]
    try:
        policy = TagPolicy.parse(text)
    except ValueError as exc:
        reader.error(reader.value_pos(raw, "tags"), f"{where}.tags: {exc}")
        return None
    cache[text] = policy
    return policy
