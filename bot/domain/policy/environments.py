"""Validation of the ``environments`` list: its size, the names, `after` without cycles, one
file per environment (each entry is read in `environment_entry.py`)."""

from __future__ import annotations

from typing import Any

from bot.domain.policy.environment_entry import ENV_KEYS, EnvironmentParser
from bot.domain.policy.model import Environment
from bot.domain.policy.reader import Reader, type_name
from bot.domain.policy.syntax import RESERVED_ENVIRONMENT_NAMES, name_problem
from bot.domain.tags import TagPolicy

MAX_ENVIRONMENTS = 20


def _names(reader: Reader, seq: list[Any]) -> dict[str, int]:
    """Environment names in file order; reports missing, invalid and duplicate names."""
    names: dict[str, int] = {}
    folded: dict[str, int] = {}
    for index, raw in enumerate(seq):
        where = f"environments[{index}]"
        if not isinstance(raw, dict) or "name" not in raw:
            continue
        name = reader.typed(raw, "name", str, "a string", where)
        if name is None:
            continue
        pos = reader.value_pos(raw, "name")
        problem = name_problem(name, "environment")
        if problem is None and name.lower() in RESERVED_ENVIRONMENT_NAMES:
            problem = f"'{name}' is reserved (Conveyor uses it in branch names)"
        if problem is not None:
            reader.error(pos, f"{where}.name: {problem}")
            continue
        if name.casefold() in folded:
            first = reader.value_pos(seq[folded[name.casefold()]], "name")
            reader.error(
                pos,
                f"{where}.name: duplicate environment '{name}' (first defined at line {first[0]})",
            )
            continue
        folded[name.casefold()] = index
        names[str(name)] = index
    return names


def _cycles(reader: Reader, seq: list[Any], envs: dict[str, Environment]) -> None:
    """Every cycle through ``after`` (names or lists), reported once at the environment of the
    cycle that comes first in the file."""
    order = {name: index for index, name in enumerate(envs)}
    reported: set[frozenset[str]] = set()
    for start in envs:
        cycle = _cycle_from(start, envs)
        if cycle is None or frozenset(cycle) in reported:
            continue
        first = min(cycle, key=order.__getitem__)
        if start != first:
            continue
        reported.add(frozenset(cycle))
        index = next(
            i for i, raw in enumerate(seq) if isinstance(raw, dict) and raw.get("name") == start
        )
        reader.error(
            reader.value_pos(seq[index], "after"),
            f"environments[{index}].after: cycle in 'after': "
            + " → ".join(reversed([*cycle, cycle[0]])),
        )


def _cycle_from(start: str, envs: dict[str, Environment]) -> list[str] | None:
    """A path ``start`` → … → ``start`` through ``after``, or None (depth first)."""
    path = [start]
    seen = {start}
    stack = [iter(envs[start].after)]
    while stack:
        upstream = next(stack[-1], None)
        if upstream is None:
            stack.pop()
            path.pop()
            continue
        if upstream == start:
            return path
        if upstream in seen or upstream not in envs:
            continue
        seen.add(upstream)
        path.append(upstream)
        stack.append(iter(envs[upstream].after))
    return None


def parse_environments(
    reader: Reader, root: dict[Any, Any], tag_cache: dict[str, TagPolicy]
) -> dict[str, Environment]:
    seq = reader.typed(root, "environments", list, "a list of environments", "")
    if seq is None:
        return {}
    if not seq:
        reader.error(
            reader.value_pos(root, "environments"), "environments: define at least one environment"
        )
        return {}
    if len(seq) > MAX_ENVIRONMENTS:
        reader.error(
            reader.value_pos(root, "environments"),
            f"environments: at most {MAX_ENVIRONMENTS} environments are supported, "
            f"found {len(seq)}",
        )
        return {}
    names = _names(reader, seq)
    parser = EnvironmentParser(reader, names, tag_cache)
    envs: dict[str, Environment] = {}
    for index, raw in enumerate(seq):
        where = f"environments[{index}]"
        pos = reader.item_pos(seq, index)
        if not isinstance(raw, dict):
            reader.error(
                pos, f"{where}: expected a mapping with name and path, got {type_name(raw)}"
            )
            continue
        reader.check_keys(raw, ENV_KEYS, where)
        reader.require(raw, ("name", "path"), where, reader.node_pos(raw, pos))
        name = raw.get("name")
        # environments with a missing, invalid or duplicate name are still checked in full
        label = name if isinstance(name, str) else f"#{index}"
        environment = parser.parse(index, raw, label)
        if isinstance(name, str) and names.get(name) == index:
            envs[name] = environment
    _cycles(reader, seq, envs)
    _shared_paths(reader, seq, envs)
    return envs


def _shared_paths(reader: Reader, seq: list[Any], envs: dict[str, Environment]) -> None:
    """Two environments writing one file would promote into both at once."""
    seen: dict[str, str] = {}
    for index, raw in enumerate(seq):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or name not in envs or not envs[name].path:
            continue
        # {env} makes one template distinct per environment; {service} stays a placeholder
        path = envs[name].path.format(service="{service}", env=name)
        if path in seen:
            reader.error(
                reader.value_pos(raw, "path"),
                f"environments[{index}].path: same path as environment '{seen[path]}'; "
                "each environment needs its own file (use {env} or a different directory)",
            )
        else:
            seen[path] = name
