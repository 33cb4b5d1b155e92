"""What one render renders: a Kustomize overlay, a Helm chart with its values, or a folder of
plain manifests (pure).

An environment's file names its target (`bot.promotion.builds`): the overlay it belongs to,
the chart above its values file. A pointer (an Argo CD Application, a Flux Kustomization or
HelmRelease, `syncs.py`) names one too, with settings of its own: Argo CD's and Flux's
Kustomize ``images``, ``patches`` or ``namePrefix`` are applied by a wrapper kustomization
built over the overlay, as the controllers apply them on top of it.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from bot.render.build import COPY_REPO, HelmJob, Job, KustomizeJob, ManifestsJob

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class OverlayTarget:
    """A Kustomize overlay; ``options`` (canonical JSON) are a pointer's own Kustomize
    settings, applied over it."""

    folder: str
    options: str = ""

    def describe(self) -> str:
        where = f"`{self.folder or '.'}`"
        return f"{where} with the pointer's Kustomize settings" if self.options else where


@dataclass(frozen=True)
class ChartTarget:
    """A chart of the repository with its values, in Helm's order: the chart's
    ``values.yaml`` (unless ``replace_defaults``), ``value_files``, ``inline``,
    ``parameters``."""

    chart: str
    value_files: tuple[str, ...]
    release: str
    namespace: str
    inline: str | None = None
    parameters: tuple[tuple[str, str, bool], ...] = ()
    replace_defaults: bool = False

    def describe(self) -> str:
        values = ", ".join(f"`{path}`" for path in self.value_files)
        extra = " and inline values" if self.inline or self.parameters else ""
        return (f"chart `{self.chart or '.'}`" + (f" with {values}" if values else "")
                + extra + f" (release {self.release} in {self.namespace})")


@dataclass(frozen=True)
class FolderTarget:
    """A folder of plain manifests, synced as they are (Argo CD's directory source)."""

    folder: str
    recurse: bool = False

    def describe(self) -> str:
        return f"the manifests of `{self.folder or '.'}`"


Target = OverlayTarget | ChartTarget | FolderTarget


def target_folder(target: Target) -> str:
    return target.chart if isinstance(target, ChartTarget) else target.folder


def option_text(options: dict[str, Any]) -> str:
    """Kustomize settings as a target keeps them: canonical JSON, '' for none."""
    kept = {key: value for key, value in options.items() if value not in (None, "", [], {})}
    return json.dumps(kept, sort_keys=True, separators=(",", ":")) if kept else ""


def option_folders(target: OverlayTarget) -> list[str]:
    """The component folders a pointer's settings add to the build."""
    if not target.options:
        return []
    components = json.loads(target.options).get("components") or []
    return [str(path) for path in components]


def wrapper(target: OverlayTarget) -> str | None:
    """The kustomization applying the pointer's settings over the overlay, in the copy's
    generated folder (JSON is YAML); None without settings."""
    if not target.options:
        return None
    options = dict(json.loads(target.options))
    below = f"../{COPY_REPO}"
    text: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [f"{below}/{target.folder}" if target.folder else below]}
    components = options.pop("components", None)
    if components:
        text["components"] = [f"{below}/{path}" for path in components]
    text.update(options)
    return json.dumps(text, indent=2) + "\n"


def folder_manifests(paths: list[str], folder: str, recurse: bool) -> list[str]:
    """The manifests a directory source syncs: its YAML and JSON files, below it when
    ``recurse``."""
    found = []
    for path in paths:
        relative = path[len(folder) + 1:] if folder else path
        if (recurse or "/" not in relative) and path.endswith(MANIFEST_SUFFIXES):
            found.append(path)
    return sorted(found)


def job_of(target: Target, *, inflates: bool = False, manifests: tuple[str, ...] = ()) -> Job:
    if isinstance(target, OverlayTarget):
        return KustomizeJob(target.folder, wrapper(target), inflates)
    if isinstance(target, ChartTarget):
        return HelmJob(target.chart, target.release, target.namespace, target.value_files,
                       target.inline, target.parameters, target.replace_defaults)
    return ManifestsJob(target.folder, manifests)


def chart_values(chart: str, path: str) -> tuple[str, ...]:
    """The value files of an environment whose file is ``path`` in ``chart``: none when it
    is the chart's own ``values.yaml`` (Helm reads that anyway)."""
    return () if path == posixpath.join(chart, "values.yaml") or (
        not chart and path == "values.yaml") else (path,)
