"""What two renders of one environment differ in, for reviewers (pure).

A render's resources are kept as YAML texts, one per resource, keyed by kind and
namespace/name: ``Deployment prod/web``. Secret values are masked before anything is kept —
every value of a Secret's ``data`` and ``stringData`` reads ``(masked)`` — and beside the text
each value is kept as a keyed hash whose key lives only in this process, so that two renders
compared in it say which values changed, never what they are. The comparison lists the
resources added and removed and a unified diff (``difflib``) of each changed one.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import io
import json
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

# A render's resources are kept up to this size (compressed in memory); past it, the diff
# says the render is too large to show.
MAX_KEPT_BYTES = 4 * 1024 * 1024
CONTEXT_LINES = 3
_MASK_KEY = os.urandom(32)
SECRET_FIELDS = ("data", "stringData")


@dataclass(frozen=True)
class Resource:
    """One rendered resource: its YAML with Secret values masked, and those values' keyed
    hashes by ``field.key``."""

    text: str
    secrets: Mapping[str, str]


@dataclass(frozen=True)
class Resources:
    """The resources of one render, packed; ``packed`` None when they were too large to
    keep."""

    packed: bytes | None
    count: int = 0

    def items(self) -> list[tuple[str, Resource]]:
        if self.packed is None:
            return []
        return [(str(key), Resource(str(text), dict(secrets)))
                for key, text, secrets in json.loads(zlib.decompress(self.packed))]


MASKED = "(masked)"


def _keyed(value: Any) -> str:
    return hmac.new(_MASK_KEY, json.dumps(value, sort_keys=True, default=str).encode(),
                    hashlib.sha256).hexdigest()


def _masked(document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    if document.get("kind") != "Secret":
        return document, {}
    shown = dict(document)
    hashes: dict[str, str] = {}
    for field in SECRET_FIELDS:
        values = shown.get(field)
        if isinstance(values, dict):
            shown[field] = {key: MASKED for key in values}
            hashes.update({f"{field}.{key}": _keyed(value) for key, value in values.items()})
        elif values is not None:
            shown[field] = MASKED
            hashes[field] = _keyed(values)
    return shown, hashes


def resource_id(document: dict[str, Any]) -> str:
    metadata = document.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name = str(metadata.get("name") or "?")
    namespace = metadata.get("namespace")
    return f"{document.get('kind')} {namespace}/{name}" if namespace else (
        f"{document.get('kind')} {name}")


def resources_of(documents: Iterable[Any]) -> Resources:
    """The resources of a render's parsed documents, Secret values masked."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    kept: list[tuple[str, str, dict[str, str]]] = []
    seen: dict[str, int] = {}
    size = 0
    for document in documents:
        if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
            continue
        key = resource_id(document)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key} #{seen[key]}"
        shown, hashes = _masked(document)
        stream = io.StringIO()
        yaml.dump(shown, stream)
        text = stream.getvalue()
        size += len(text)
        if size > MAX_KEPT_BYTES:
            return Resources(None, len(kept) + 1)
        kept.append((key, text, hashes))
    return Resources(zlib.compress(json.dumps(kept).encode()), len(kept))


@dataclass(frozen=True)
class RenderDiff:
    """How the resources of two renders differ."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...]  # (id, unified diff lines)
    unknown: str | None = None  # why the resources cannot be compared

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.unknown)


def compare(before: Resources | None, after: Resources | None) -> RenderDiff:
    """The resources ``after`` adds, removes and changes against ``before`` (None: nothing
    rendered there)."""
    if (before is not None and before.packed is None) or (
            after is not None and after.packed is None):
        return RenderDiff((), (), (), unknown="the render is too large to show its diff")
    old = dict(before.items()) if before is not None else {}
    new = dict(after.items()) if after is not None else {}
    changed = []
    for key in sorted(set(old) & set(new)):
        secrets = sorted(name for name in set(old[key].secrets) | set(new[key].secrets)
                         if old[key].secrets.get(name) != new[key].secrets.get(name))
        if old[key].text == new[key].text and not secrets:
            continue
        lines = list(difflib.unified_diff(old[key].text.splitlines(),
                                          new[key].text.splitlines(), f"{key} (base)",
                                          f"{key} (head)", n=CONTEXT_LINES, lineterm=""))
        lines += [f"# the value of {name} changes (masked)" for name in secrets]
        changed.append((key, tuple(lines)))
    return RenderDiff(tuple(sorted(set(new) - set(old))), tuple(sorted(set(old) - set(new))),
                      tuple(changed))


def diff_lines(title: str, diff: RenderDiff) -> list[str]:
    """The Markdown of one environment's diff: what is added and removed, then each changed
    resource's unified diff in a fenced block."""
    lines = [f"### {title}", ""]
    if diff.unknown is not None:
        return [*lines, diff.unknown, ""]
    if diff.empty:
        return [*lines, "The rendered resources do not change.", ""]
    lines += [f"- added: `{key}`" for key in diff.added]
    lines += [f"- removed: `{key}`" for key in diff.removed]
    lines += [f"- changed: `{key}`" for key, _ in diff.changed]
    for _, body in diff.changed:
        lines += ["", "```diff", *_fenced(body), "```"]
    return [*lines, ""]


def _fenced(body: Sequence[str]) -> list[str]:
    # A line of three backticks would close the fence early.
    return [line.replace("```", "`\u200b``") for line in body]
