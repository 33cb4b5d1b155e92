"""Kubernetes resources against the OpenAPI schemas of one Kubernetes version.

The schemas are those the ``kubernetes-validate`` package ships (strict variants: an unknown
field is an error). Its own ``validate()`` re-reads a 1.3 MB definitions file per call and
stops at the first error, so the check loads each version's definitions once, keeps one
compiled validator per kind, and reports every error with its path. jsonschema and the
schemas are loaded on first use: a bot that never sees a manifest never pays for them.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bot.configcheck.documents import Document, Path
from bot.configcheck.messages import describe, suggest
from bot.domain.policy.kubernetes import schema_root

MAX_ERRORS_PER_DOCUMENT = 20
KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
Validate = Callable[[Any], Iterator[Any]]


@dataclass(frozen=True)
class Outcome:
    """What became of one document: findings (line, message) or a neutral note."""

    findings: tuple[tuple[int, str], ...] = ()
    note: str | None = None
    validated: bool = False


@dataclass(frozen=True)
class Catalogue:
    version: str
    definitions: dict[str, Any]  # name → schema, references linked (see `link`)
    kinds: dict[tuple[str, str, str], str]  # (group, version, kind) → definition name
    groups: frozenset[str]  # every group the version serves or once served


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` → (``apps``, ``v1``); ``v1`` → (``""``, ``v1``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def is_resource(data: Any) -> bool:
    """A mapping with string ``apiVersion`` and ``kind``: what Kubernetes would accept."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("apiVersion"), str)
        and isinstance(data.get("kind"), str)
    )


def is_kustomize(data: Any) -> bool:
    return is_resource(data) and split_api_version(data["apiVersion"])[0] == KUSTOMIZE_GROUP


def _annotation(key: str) -> bool:
    return key == "description" or key.startswith("x-kubernetes-")


def link(definitions: dict[str, Any]) -> None:
    """Replace each ``{"$ref": ".../$defs/Name"}`` by the definition itself, in place.

    The schemas become a graph of plain dicts (cyclic where Kubernetes' types are), which
    jsonschema walks only as deep as the document goes, without a reference lookup per
    ``$ref``: that lookup was most of the validation time. A ``$ref`` with keywords beside it
    other than annotations is left as it is.
    """

    def target(value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("$ref"), str) and all(
            _annotation(key) for key in value if key != "$ref"
        ):
            name = value["$ref"].rpartition("/")[2]
            return definitions.get(name, value)
        return value

    seen: set[int] = set()
    pending: list[Any] = list(definitions.values())
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict) and _types_only(node.get("oneOf")):
            # int-or-string and quantities: {"oneOf": [{"type": [string, null]}, {"type":
            # [integer, null]}]} refuses null (it matches both); one type list does not
            types: list[str] = []
            for option in node.pop("oneOf"):
                kinds = option["type"] if isinstance(option["type"], list) else [option["type"]]
                types += [kind for kind in kinds if kind not in types]
            node["type"] = types
        if isinstance(node, dict):
            for key, value in node.items():
                node[key] = target(value)
                pending.append(node[key])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                node[index] = target(value)
                pending.append(node[index])


def _types_only(options: Any) -> bool:
    return isinstance(options, list) and bool(options) and all(
        isinstance(option, dict) and set(option) == {"type"} for option in options
    )


@functools.lru_cache(maxsize=4)
def catalogue(version: str) -> Catalogue | None:
    """The schemas of Kubernetes ``version`` ("1.31"), or None when they are not installed."""
    root = schema_root()
    if root is None:
        return None
    path = os.path.join(root, f"v{version}.0-local-strict", "_definitions.json")
    try:
        with open(path, encoding="utf-8") as handle:
            definitions: dict[str, Any] = json.load(handle)["$defs"]
    except (OSError, ValueError, KeyError):
        return None
    kinds: dict[tuple[str, str, str], str] = {}
    groups: set[str] = set()
    for name, schema in definitions.items():
        gvks = schema.get("x-kubernetes-group-version-kind") or []
        groups.update(str(gvk["group"]) for gvk in gvks)
        if len(gvks) != 1:  # DeleteOptions and WatchEvent are listed under every group
            continue
        gvk = gvks[0]
        kinds[(gvk["group"], gvk["version"], gvk["kind"])] = name
    link(definitions)
    return Catalogue(version=version, definitions=definitions, kinds=kinds,
                     groups=frozenset(groups))


def prepare(version: str) -> None:
    """Load jsonschema and the schemas of ``version`` (about a second, once per process):
    called in a worker thread so that the event loop keeps answering meanwhile."""
    import jsonschema  # type: ignore[import-untyped,unused-ignore]  # noqa: F401

    catalogue(version)


@functools.lru_cache(maxsize=512)
def _validator(version: str, definition: str) -> Validate:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    found = catalogue(version)
    assert found is not None
    iter_errors: Validate = Draft202012Validator(found.definitions[definition]).iter_errors
    return iter_errors


def _unknown(found: Catalogue, group: str, api_version: str, kind: str) -> str:
    served = sorted(
        (f"{g}/{v}" if g else v) for g, v, k in found.kinds if k == kind
    )
    if served:
        return (f"{kind} is not served as {api_version} in Kubernetes {found.version}; "
                f"use apiVersion {' or '.join(served)}")
    in_group = sorted({k for g, _, k in found.kinds if g == group})
    return (f"unknown kind '{kind}' for apiVersion {api_version} in Kubernetes "
            f"{found.version}" + suggest(kind, in_group))


def check_resource(doc: Document, version: str, data: Any = None, prefix: Path = ()) -> Outcome:
    """Validate one resource (``doc.data`` unless ``data`` is given) against ``version``."""
    data = doc.data if data is None else data
    api_version, kind = str(data["apiVersion"]), str(data["kind"])
    name = (data.get("metadata") or {}).get("name") if isinstance(
        data.get("metadata"), dict) else None
    title = f"{kind} {name}" if isinstance(name, str) else kind
    found = catalogue(version)
    if found is None:
        return Outcome(note=f"{api_version} {title}: no schemas for Kubernetes {version}")
    group, served_version = split_api_version(api_version)
    if kind == "List" and api_version == "v1" and isinstance(data.get("items"), list):
        return _check_list(doc, version, data, prefix)
    definition = found.kinds.get((group, served_version, kind))
    if definition is None:
        if group in found.groups or "." not in group:  # a custom group needs a dot
            line = doc.line_of((*prefix, "kind"))
            return Outcome(findings=((line, _unknown(found, group, api_version, kind)),))
        return Outcome(note=f"{api_version} {title}: custom resource, schema not known; "
                            "not validated")
    findings: list[tuple[int, str]] = []
    for error in _validator(version, definition)(data):
        for line, message in describe(error, doc, prefix):
            findings.append((line, f"{title}: {message} (Kubernetes {version})"))
        if len(findings) >= MAX_ERRORS_PER_DOCUMENT:
            break
    return Outcome(findings=tuple(sorted(findings)[:MAX_ERRORS_PER_DOCUMENT]), validated=True)


def _check_list(doc: Document, version: str, data: dict[str, Any], prefix: Path) -> Outcome:
    findings: list[tuple[int, str]] = []
    notes: list[str] = []
    for index, item in enumerate(data["items"]):
        where_ = (*prefix, "items", index)
        if not is_resource(item):
            findings.append((doc.line_of(where_), f"items[{index}]: needs apiVersion and kind"))
            continue
        outcome = check_resource(doc, version, item, where_)
        findings += outcome.findings
        notes += [outcome.note] if outcome.note else []
    return Outcome(findings=tuple(findings), note="; ".join(notes) or None, validated=True)
