"""Validation of ``groups``: named sets of services promoted together as release trains."""

from __future__ import annotations

from typing import Any

from bot.domain.policy.fields import suggest
from bot.domain.policy.model import Group, Service
from bot.domain.policy.reader import Pos, Reader, type_name
from bot.domain.policy.syntax import name_problem

MAX_GROUPS = 200
GROUP_KEYS = ("services", "together")
# `/promote <env> --all` promotes every service as the train "all", so no group may take it.
RESERVED_GROUP_NAMES = frozenset({"all"})


class _GroupParser:
    def __init__(self, reader: Reader, services: dict[str, Service]) -> None:
        self.reader = reader
        self.services = services
        self.service_names = list(services)
        self.folded_services = {name.casefold(): name for name in services}
        # service → the together-group that holds it, for the one-together-group rule
        self.together_owner: dict[str, str] = {}

    def parse(self, name: str, raw: Any, pos: Pos, line: int) -> Group | None:
        reader, where = self.reader, f"groups.{name}"
        together = False
        if isinstance(raw, list):
            members, members_pos = raw, pos
        elif isinstance(raw, dict):
            reader.check_keys(raw, GROUP_KEYS, where)
            reader.require(raw, ("services",), where, reader.node_pos(raw, pos))
            if "together" in raw:
                together = bool(reader.typed(raw, "together", bool, "true or false", where))
            if "services" not in raw:
                return None
            members = reader.typed(raw, "services", list, "a list of service names", where)
            if members is None:
                return None
            members_pos, where = reader.value_pos(raw, "services"), f"{where}.services"
        else:
            reader.error(
                pos,
                f"{where}: expected a list of services or a mapping with services and "
                f"together, got {type_name(raw)}",
            )
            return None
        names = self._members(members, members_pos, where)
        if names is None:
            return None
        group = Group(name=name, services=tuple(names), together=together, line=line)
        if together:
            self._check_together(group, members, where)
        return group

    def _members(self, seq: list[Any], pos: Pos, where: str) -> list[str] | None:
        reader = self.reader
        if not seq:
            reader.error(pos, f"{where}: a group needs at least one service")
            return None
        names: list[str] = []
        ok = True
        for index, item in enumerate(seq):
            item_pos = reader.item_pos(seq, index)
            if not isinstance(item, str):
                reader.error(
                    item_pos, f"{where}[{index}]: expected a service name, got {type_name(item)}"
                )
                ok = False
            elif item not in self.services:
                reader.error(
                    item_pos,
                    f"{where}[{index}]: unknown service '{item}'"
                    + suggest(item, self.service_names),
                )
                ok = False
            elif item in names:
                reader.error(item_pos, f"{where}[{index}]: service '{item}' is listed twice")
                ok = False
            else:
                names.append(item)
        return names if ok else None

    def _check_together(self, group: Group, seq: list[Any], where: str) -> None:
        """A release feeds one waiting train: a service may be in one together-group only."""
        for index, service in enumerate(group.services):
            other = self.together_owner.setdefault(service, group.name)
            if other != group.name:
                self.reader.error(
                    self.reader.item_pos(seq, index),
                    f"{where}[{index}]: service '{service}' is already in group '{other}' "
                    "with together: true; a service can wait for one group only",
                )


def parse_groups(
    reader: Reader, root: dict[Any, Any], services: dict[str, Service]
) -> dict[str, Group]:
    mapping = reader.typed(root, "groups", dict, "a mapping of group name to services", "")
    if mapping is None:
        return {}
    if len(mapping) > MAX_GROUPS:
        reader.error(
            reader.value_pos(root, "groups"),
            f"groups: at most {MAX_GROUPS} groups are supported, found {len(mapping)}",
        )
        return {}
    parser = _GroupParser(reader, services)
    groups: dict[str, Group] = {}
    folded: dict[str, str] = {}
    for name, raw in mapping.items():
        key_pos = reader.key_pos(mapping, name)
        label = f"groups.{name}"
        problem = name_problem(name, "group") if isinstance(name, str) else "keys must be strings"
        if problem is None and name.casefold() in RESERVED_GROUP_NAMES:
            problem = f"'{name}' is reserved (/promote <env> --all promotes every service)"
        if problem is None and name.casefold() in parser.folded_services:
            service = parser.folded_services[name.casefold()]
            problem = (
                f"'{name}' is also the name of service '{service}'; /rollback and /promote "
                "could not tell them apart, so rename the group"
            )
        if problem is None and name.casefold() in folded:
            problem = f"duplicate group (differs from '{folded[name.casefold()]}' only in case)"
        if problem is not None:
            reader.error(key_pos, f"{label}: {problem}")
        else:
            folded[name.casefold()] = name
        value_pos = reader.value_pos(mapping, name)
        # groups with a bad name are still checked in full, but not kept
        group = parser.parse(str(name), raw, value_pos, key_pos[0])
        if problem is None and group is not None:
            groups[str(name)] = group
    return groups
