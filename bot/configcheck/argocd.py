"""Argo CD Applications and argocd-image-updater write-back files: their image pins.

Argo CD hands each ``kustomize.images`` string of a source to ``kustomize edit set image``
and each ``helm.parameters`` entry to ``helm --set``; a string that is not an image reference
or a parameter without a name fails there, at sync time. The check finds them at review time
instead, on their lines: in every source of an ``Application`` (``spec.source``,
``spec.sources[]``), of an ``ApplicationSet``'s ``spec.template``, and at the top level of a
``.argocd-source-<app>.yaml`` file.
"""

from __future__ import annotations

import posixpath
from typing import Any

from bot.configcheck.documents import Document, Path
from bot.domain.images import parse_image_ref
from bot.manifests.shapes import split_argocd_image

ARGOCD_GROUP = "argoproj.io"
WRITE_BACK_PREFIX = ".argocd-source-"


def is_write_back_file(path: str) -> bool:
    name = posixpath.basename(path)
    return name.startswith(WRITE_BACK_PREFIX) and name.endswith((".yaml", ".yml"))


def _sources(doc: Document, path: str) -> list[tuple[Path, Any]]:
    """(path, source) of every source the document holds."""
    data = doc.data
    if not isinstance(data, dict):
        return []
    if is_write_back_file(path):
        return [((), data)]
    if str(data.get("apiVersion", "")).partition("/")[0] != ARGOCD_GROUP:
        return []
    spec: Any = data.get("spec")
    at: Path = ("spec",)
    if data.get("kind") == "ApplicationSet":
        template = spec.get("template") if isinstance(spec, dict) else None
        spec = template.get("spec") if isinstance(template, dict) else None
        at = ("spec", "template", "spec")
    elif data.get("kind") != "Application":
        return []
    if not isinstance(spec, dict):
        return []
    found: list[tuple[Path, Any]] = []
    if isinstance(spec.get("source"), dict):
        found.append(((*at, "source"), spec["source"]))
    if isinstance(spec.get("sources"), list):
        found += [((*at, "sources", i), s) for i, s in enumerate(spec["sources"])]
    return found


def _label(at: Path) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in at)[1:]


def _image_problem(entry: Any) -> str | None:
    if not isinstance(entry, str):
        return "expected a string NAME:TAG, NAME@DIGEST or NAME=NEWNAME:TAG"
    prefix, target = split_argocd_image(entry)
    try:
        if prefix:
            parse_image_ref(prefix[:-1])
        parse_image_ref(target)
    except ValueError as exc:
        return f"'{entry[:120]}' is not NAME:TAG, NAME@DIGEST or NAME=NEWNAME:TAG ({exc})"
    return None


def source_findings(doc: Document, path: str) -> list[tuple[int, str]]:
    """Malformed ``kustomize.images`` strings and ``helm.parameters`` entries."""
    findings: list[tuple[int, str]] = []
    for at, source in _sources(doc, path):
        if not isinstance(source, dict):
            continue
        kustomize = source.get("kustomize")
        images = kustomize.get("images") if isinstance(kustomize, dict) else None
        if isinstance(images, list):
            for index, entry in enumerate(images):
                where = (*at, "kustomize", "images", index)
                problem = _image_problem(entry)
                if problem is not None:
                    findings.append((doc.line_of(where), f"{_label(where)}: {problem}"))
        helm = source.get("helm")
        parameters = helm.get("parameters") if isinstance(helm, dict) else None
        if isinstance(parameters, list):
            for index, entry in enumerate(parameters):
                where = (*at, "helm", "parameters", index)
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    findings.append((doc.line_of(where),
                                     f"{_label(where)}: expected a mapping with name and value"))
    return findings
