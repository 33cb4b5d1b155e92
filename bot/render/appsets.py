"""An Argo CD ApplicationSet expanded into the applications it generates (pure).

The ``list`` generator's elements and the ``git`` generator's directories and files (of this
repository, read from its tree at the same commit) give one set of parameters each; the
template is filled with them the way Argo CD fills it — ``{{key}}`` (``path``,
``path.basename``, ``path[1]``, an element's keys) or, with ``goTemplate``, plain field
references (``{{ .path.basename }}``). Anything more (another generator, a matrix, a template
function, ``templatePatch``) is not evaluated here: the set cannot be expanded, and the gate
fails closed when such a set changes where its template could reach a gated folder.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.render.inputs import NeedTexts, TreeIndex
from bot.render.syncs import Follow, SyncObject, argo_follows
from bot.yamlread.data import DataBuilder
from bot.yamlread.nodes import MAX_NODES, YamlError, parse

MAX_GENERATED = 500
_FAST = re.compile(r"\{\{\s*([A-Za-z0-9_.\-\[\]]+)\s*\}\}")
_GO = re.compile(r"\{\{-?\s*\.([A-Za-z0-9_.]+)\s*-?\}\}")
_GO_INDEX = re.compile(r"\{\{-?\s*index\s+\.([A-Za-z0-9_.]+)\s+(\d+)\s*-?\}\}")


@dataclass(frozen=True)
class Expansion:
    """The applications a set generates, as (generated name, follow); or why it cannot be
    expanded. ``template`` are the template's own follows, unfilled: where it could reach."""

    follows: tuple[tuple[str, Follow], ...]
    template: tuple[Follow, ...]
    problem: str | None = None


Here = Callable[[str, str], bool]  # whether (url, revision) is this repository's default branch


def expand(obj: SyncObject, index: TreeIndex, texts: Mapping[str, str | None], here: Here
           ) -> Expansion | NeedTexts:
    spec = obj.raw.get("spec") if isinstance(obj.raw.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    assert isinstance(template, dict)
    template_spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    assert isinstance(template_spec, dict)
    unfilled = tuple(follow for _, follow in argo_follows(template_spec, ""))
    go = bool(spec.get("goTemplate"))
    if spec.get("templatePatch"):
        return Expansion((), unfilled, "it patches its template (`templatePatch`), which "
                                       "Conveyor does not evaluate")
    params: list[dict[str, Any]] = []
    needed: list[str] = []
    for generator in spec.get("generators") or []:
        if not isinstance(generator, dict) or len(generator) != 1:
            return Expansion((), unfilled, "one of its generators is not a single generator")
        [(kind, settings)] = generator.items()
        settings = settings if isinstance(settings, dict) else {}
        if kind == "list":
            params += [_flat(e, go) for e in settings.get("elements") or []
                       if isinstance(e, dict)]
        elif kind == "git":
            found = _git(settings, index, texts, here, go)
            if isinstance(found, str):
                return Expansion((), unfilled, found)
            if isinstance(found, NeedTexts):
                needed += found.paths
                continue
            params += found
        else:
            return Expansion((), unfilled, f"its `{kind}` generator is not one Conveyor "
                                           "expands (only `list` and `git`)")
    if needed:
        return NeedTexts(tuple(dict.fromkeys(needed)))
    if len(params) > MAX_GENERATED:
        return Expansion((), unfilled, f"it generates more than {MAX_GENERATED} applications")
    follows: list[tuple[str, Follow]] = []
    for values in params:
        try:
            filled = _fill(template, values, go)
        except CannotFill as exc:
            return Expansion((), unfilled, str(exc))
        metadata = filled.get("metadata") if isinstance(filled.get("metadata"), dict) else {}
        name = str(metadata.get("name") or "") if isinstance(metadata, dict) else ""
        filled_spec = filled.get("spec") if isinstance(filled.get("spec"), dict) else {}
        assert isinstance(filled_spec, dict)
        for key, follow in argo_follows(filled_spec, name):
            follows.append((f"{name} {key}".strip(), follow))
    return Expansion(tuple(follows), unfilled)


def _git(settings: Mapping[str, Any], index: TreeIndex, texts: Mapping[str, str | None],
         here: Here, go: bool) -> list[dict[str, Any]] | NeedTexts | str:
    if not here(str(settings.get("repoURL") or ""), str(settings.get("revision") or "")):
        return ("its `git` generator reads another repository or revision, which Conveyor "
                "does not read")
    params: list[dict[str, Any]] = []
    directories = [d for d in settings.get("directories") or [] if isinstance(d, dict)]
    if directories:
        included = [str(d.get("path") or "") for d in directories if not d.get("exclude")]
        excluded = [str(d.get("path") or "") for d in directories if d.get("exclude")]
        for folder in sorted(index.folders):
            if folder and any(_glob(folder, p) for p in included) and not any(
                    _glob(folder, p) for p in excluded):
                params.append(_path_params(folder, go))
    patterns = [str(f.get("path") or "") for f in settings.get("files") or []
                if isinstance(f, dict)]
    matched = [path for path in sorted(index.sizes) if any(_glob(path, p) for p in patterns)]
    missing = [path for path in matched if path not in texts]
    if missing:
        return NeedTexts(tuple(missing))
    for path in matched:
        content = _document(texts[path])
        if content is None:
            return f"its `git` generator reads `{path}`, which is not a YAML or JSON object"
        values = _flat(content, go)
        values.update(_path_params(posixpath.dirname(path), go, filename=path))
        params.append(values)
    return params


def _glob(path: str, pattern: str) -> bool:
    if "**" in pattern:
        return fnmatch.fnmatchcase(path, pattern.replace("**", "*"))
    parts, wanted = path.split("/"), pattern.strip("/").split("/")
    return len(parts) == len(wanted) and all(
        fnmatch.fnmatchcase(part, want) for part, want in zip(parts, wanted, strict=True))


def _path_params(folder: str, go: bool, filename: str | None = None) -> dict[str, Any]:
    segments = folder.split("/") if folder else []
    basename = segments[-1] if segments else ""
    normalized = re.sub(r"[^a-zA-Z0-9-]", "-", basename).lower()
    if go:
        found: dict[str, Any] = {"path": folder, "basename": basename,
                                 "basenameNormalized": normalized, "segments": segments}
        if filename is not None:
            found["filename"] = posixpath.basename(filename)
        return {"path": found}
    flat: dict[str, Any] = {"path": folder, "path.basename": basename,
                            "path.basenameNormalized": normalized}
    flat.update({f"path[{i}]": segment for i, segment in enumerate(segments)})
    if filename is not None:
        flat["path.filename"] = posixpath.basename(filename)
    return flat


def _flat(element: Mapping[str, Any], go: bool) -> dict[str, Any]:
    if go:
        return dict(element)
    flat: dict[str, Any] = {}
    for key, value in element.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{inner}": item for inner, item in _flat(value, go).items()})
        else:
            flat[str(key)] = value
    return flat


class CannotFill(Exception):
    """A template expression is not a plain parameter."""


def _fill(value: Any, params: Mapping[str, Any], go: bool) -> Any:
    """``value`` with every template expression filled; CannotFill (with a one-line reason)
    when an expression is not a plain parameter."""
    if isinstance(value, dict):
        return {key: _fill(item, params, go) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, params, go) for item in value]
    if isinstance(value, str) and "{{" in value:
        return _fill_text(value, params, go)
    return value


def _fill_text(text: str, params: Mapping[str, Any], go: bool) -> str:
    def lookup(key: str) -> Any:
        if not go:
            return params.get(key)
        found: Any = params
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        return found

    def indexed(match: re.Match[str]) -> str:
        found = lookup(match[1])
        position = int(match[2])
        return str(found[position]) if isinstance(found, list) and position < len(found) \
            else ""

    if go:
        filled = _GO_INDEX.sub(indexed, text)
        filled = _GO.sub(lambda m: _text(lookup(m[1])), filled)
    else:
        filled = _FAST.sub(lambda m: _text(lookup(m[1])), text)
    if "{{" in filled:
        raise CannotFill(f"its template holds `{text}`, an expression Conveyor does not "
                         "evaluate")
    return filled


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _document(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        stream = parse(text)
    except YamlError:
        return None
    if not stream.documents:
        return None
    data = DataBuilder(MAX_NODES).build(stream.documents[0].root)
    return dict(data) if isinstance(data, dict) else None
