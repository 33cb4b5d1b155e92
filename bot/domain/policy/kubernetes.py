"""``kubernetes_version``: which Kubernetes API the config check validates manifests against.

The versions are those whose OpenAPI schemas the ``kubernetes-validate`` package ships. They
are read from its data directory without importing it: the package imports jsonschema at
once, and loading a policy must stay cheap.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import Any

from bot.domain.policy.reader import Reader, type_name

SCHEMA_PACKAGE = "kubernetes_validate"
SCHEMA_DIR = "kubernetes-json-schema"
_DIR_RE = re.compile(r"v(\d+)\.(\d+)\.\d+-local-strict")
_VALUE_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")


def schema_root() -> str | None:
    """The directory holding one ``v<version>-local[-strict]`` folder per Kubernetes version."""
    spec = importlib.util.find_spec(SCHEMA_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = os.path.join(location, SCHEMA_DIR)
        if os.path.isdir(candidate):
            return candidate
    return None


@functools.lru_cache(maxsize=1)
def supported_kubernetes_versions() -> tuple[str, ...]:
    """``("1.25", ..., "1.37")``: oldest first; empty when the schemas are not installed."""
    root = schema_root()
    if root is None:
        return ()
    found = {
        (int(match[1]), int(match[2]))
        for name in os.listdir(root)
        if (match := _DIR_RE.fullmatch(name)) is not None
    }
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def latest_kubernetes_version() -> str:
    """The newest version shipped, the default of ``kubernetes_version`` ("" when none is)."""
    versions = supported_kubernetes_versions()
    return versions[-1] if versions else ""


def parse_kubernetes_version(reader: Reader, root: dict[Any, Any]) -> str:
    """The validated ``kubernetes_version`` as ``major.minor``; reports and defaults otherwise."""
    value = root["kubernetes_version"]
    pos = reader.value_pos(root, "kubernetes_version")
    supported = supported_kubernetes_versions()
    span = f"{supported[0]} to {supported[-1]}" if supported else "none are installed"
    if isinstance(value, float):
        reader.error(
            pos,
            f'kubernetes_version: write the version as a quoted string such as "1.31" '
            f"(YAML reads {value!r} as a number; 1.30 would become 1.3)",
        )
        return latest_kubernetes_version()
    if not isinstance(value, str):
        reader.error(
            pos, f'kubernetes_version: expected a string such as "1.31", got {type_name(value)}'
        )
        return latest_kubernetes_version()
    match = _VALUE_RE.fullmatch(value.strip())
    version = f"{int(match[1])}.{int(match[2])}" if match else None
    if version is None or version not in supported:
        reader.error(
            pos,
            f"kubernetes_version: unsupported Kubernetes version {value!r}; "
            f"supported: {span}",
        )
        return latest_kubernetes_version()
    return version
