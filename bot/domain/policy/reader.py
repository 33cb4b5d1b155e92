"""Positions and typed access to the composed YAML tree, collecting issues as it goes."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from bot.domain.policy.issues import PolicyIssue

Pos = tuple[int, int]  # 1-based line and column

ROOT: Pos = (1, 1)


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


class Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.issues: list[PolicyIssue] = []
        self.notices: list[PolicyIssue] = []

    def error(self, pos: Pos, message: str) -> None:
        self.issues.append(PolicyIssue(self.path, pos[0], pos[1], message))

    def notice(self, pos: Pos, message: str) -> None:
        """Advice: printed by check-config, never a reason to refuse the policy."""
        self.notices.append(PolicyIssue(self.path, pos[0], pos[1], message))

    @staticmethod
    def node_pos(node: Any, fallback: Pos = ROOT) -> Pos:
        pos = getattr(node, "pos", None)
        return pos if isinstance(pos, tuple) else fallback

    def key_pos(self, mapping: Any, key: Any) -> Pos:
        positions = getattr(mapping, "key_pos", {})
        return positions[key] if key in positions else self.node_pos(mapping)

    def value_pos(self, mapping: Any, key: Any) -> Pos:
        positions = getattr(mapping, "value_pos", {})
        return positions[key] if key in positions else self.key_pos(mapping, key)

    def item_pos(self, seq: Any, index: int) -> Pos:
        positions = getattr(seq, "item_pos", [])
        return positions[index] if 0 <= index < len(positions) else self.node_pos(seq)

    def check_keys(self, mapping: dict[Any, Any], allowed: Sequence[str], where: str) -> None:
        for key in mapping:
            if isinstance(key, str) and key in allowed:
                continue
            label = f"{where}.{key}" if where else str(key)
            if not isinstance(key, str):
                self.error(self.key_pos(mapping, key), f"{label}: keys must be strings")
                continue
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            hint = (
                f"did you mean '{close[0]}'?" if close else "expected one of: " + ", ".join(allowed)
            )
            self.error(self.key_pos(mapping, key), f"{label}: unknown key ({hint})")

    def require(self, mapping: dict[Any, Any], keys: Sequence[str], where: str, pos: Pos) -> None:
        for key in keys:
            if key not in mapping:
                label = f"{where}: missing" if where else "missing"
                self.error(pos, f"{label} required key '{key}'")

    def typed(
        self,
        mapping: dict[Any, Any],
        key: str,
        kind: type | tuple[type, ...],
        label: str,
        where: str,
    ) -> Any:
        """The value of ``key`` if it has the expected type; otherwise report and return None."""
        value = mapping[key]
        wrong_bool = isinstance(value, bool) and bool not in (
            kind if isinstance(kind, tuple) else (kind,)
        )
        if not isinstance(value, kind) or wrong_bool:
            self.error(
                self.value_pos(mapping, key),
                f"{where}.{key}: expected {label}, got {type_name(value)}".removeprefix("."),
            )
            return None
        return value
