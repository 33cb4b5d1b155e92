"""Writing a new scalar value in the style of the one it replaces."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from ruamel.yaml.resolver import VersionedResolver

# Kubernetes tooling reads YAML 1.1 (go-yaml: `on`, `0755`), ruamel reads 1.2: a plain value must
# be a string under both. The implicit-resolver tables are taken once; asking the resolver per
# value re-derives them every time, which dominated the cost of scanning large files.
_TABLES: tuple[dict[Any, list[tuple[Any, Any]]], ...] = tuple(
    VersionedResolver(version=version).versioned_resolver for version in ((1, 1), (1, 2))
)
_PLAIN_SAFE_RE = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:@+=-]*")  # "=": Argo CD NAME=NEWNAME


@lru_cache(maxsize=4096)
def plain_is_string(value: str) -> bool:
    """Whether ``value`` written without quotes is read back as a string by YAML 1.1 and 1.2."""
    for table in _TABLES:
        candidates = table.get(value[:1], []) + table.get(None, [])
        if any(regexp.match(value) for _, regexp in candidates):
            return False
    return True


def can_be_plain(value: str) -> bool:
    return _PLAIN_SAFE_RE.fullmatch(value) is not None and plain_is_string(value)


def double_quoted(value: str) -> str:
    # JSON string syntax is a subset of YAML's double-quoted style.
    return json.dumps(value)


def single_quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def render(
    value: str, style: str | None, *, explicit_str: bool = False, in_flow: bool = False
) -> str:
    """``value`` in the quoting ``style`` of the scalar it replaces (None = plain).

    A plain value that would read back as a number, date, boolean or null is double-quoted,
    unless the scalar carries an explicit ``!!str`` tag. Inside flow collections a value with
    ``:`` is quoted too: YAML 1.1 parsers (libyaml, go-yaml v2) refuse it there.
    """
    if style == "'":
        return single_quoted(value)
    if style == '"' or (in_flow and ":" in value):
        return double_quoted(value)
    if explicit_str and _PLAIN_SAFE_RE.fullmatch(value) is not None:
        return value
    return value if can_be_plain(value) else double_quoted(value)
