"""Which files of a tree one render reads, whatever it renders (pure): a Kustomize overlay's
kustomizations walked (`inputs.py`), a chart's folder and value files (`charts.py`), a folder's
manifests. What a render reads is what the gate watches: a change to any of it can change
what the environment runs."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, replace

from bot.render.build import Job
from bot.render.charts import chart_file, chart_inputs
from bot.render.inputs import NeedTexts, TreeIndex, build_inputs, unjudged_entry
from bot.render.targets import (
    ChartTarget,
    FolderTarget,
    OverlayTarget,
    Target,
    folder_manifests,
    job_of,
    option_folders,
)


@dataclass(frozen=True)
class RenderInputs:
    """One render's inputs at one commit."""

    target: Target
    roots: tuple[str, ...]  # folders whose every file the render may read
    singles: tuple[str, ...]  # files it reads outside them (value files elsewhere)
    files: tuple[str, ...]  # what the private copy holds
    problems: tuple[str, ...]  # why the render cannot be run
    job: Job

    def takes(self, path: str) -> bool:
        """Whether the render takes ``path`` as one of its inputs proper: what ``reads``
        says, but not another environment's values file beside a chart's own (Helm reads it
        only if a template asks ``.Files`` for it, and the gate renders to see)."""
        if isinstance(self.target, ChartTarget) and path not in self.target.value_files:
            name = path[len(self.target.chart) + 1:] if self.target.chart else path
            if "/" not in name and name.startswith("values") and name != "values.yaml" \
                    and name.endswith((".yaml", ".yml")):
                return False
        return self.reads(path)

    def reads(self, path: str) -> bool:
        """Whether a change to ``path`` can change this render."""
        if path in self.singles:
            return True
        if isinstance(self.target, FolderTarget):
            return path in self.files or posixpath.dirname(path) == self.target.folder
        return any(not root or path == root or path.startswith(root + "/")
                   for root in self.roots)


def render_inputs(index: TreeIndex, target: Target, texts: Mapping[str, str | None]
                  ) -> RenderInputs | NeedTexts:
    """The inputs of rendering ``target``, given the texts read so far (kustomizations, a
    ``Chart.yaml``); or the files to read next."""
    found = _inputs(index, target, texts)
    if isinstance(found, NeedTexts):
        return found
    links = _links_read(index, found)
    return replace(found, problems=(*found.problems, *links)) if links else found


def _links_read(index: TreeIndex, inputs: RenderInputs) -> tuple[str, ...]:
    """Why the render cannot be judged: the first symbolic link or submodule it reads that
    no problem names yet (a kustomization naming one), and how many more."""
    target = inputs.target
    below = target.folder if isinstance(target, FolderTarget) and target.recurse else None
    found = [unjudged_entry(path, mode) for path, mode in sorted(index.modes.items())
             if inputs.reads(path) or (below is not None and (
                 not below or path.startswith(below + "/")))]
    found = [problem for problem in found if problem not in inputs.problems]
    if not found:
        return ()
    return (found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else ""),)


def _inputs(index: TreeIndex, target: Target, texts: Mapping[str, str | None]
            ) -> RenderInputs | NeedTexts:
    if isinstance(target, OverlayTarget):
        return _overlay(index, target, texts)
    if isinstance(target, ChartTarget):
        wanted = chart_file(target.chart)
        if wanted in index.sizes and wanted not in texts:
            return NeedTexts((wanted,))
        found = chart_inputs(index, target.chart, target.value_files, texts.get(wanted))
        outside = tuple(path for path in target.value_files
                        if not (not target.chart or path.startswith(target.chart + "/")))
        return RenderInputs(target, (target.chart,), outside, found.files, found.problems,
                            job_of(target))
    files = folder_manifests(index.under(target.folder), target.folder, target.recurse)
    return RenderInputs(target, (), (), tuple(files), (), job_of(target, manifests=tuple(files)))


def _overlay(index: TreeIndex, target: OverlayTarget, texts: Mapping[str, str | None]
             ) -> RenderInputs | NeedTexts:
    roots: set[str] = set()
    files: set[str] = set()
    problems: list[str] = []
    needed: list[str] = []
    inflates = False
    for folder in (target.folder, *option_folders(target)):
        found = build_inputs(index, folder, texts)
        if isinstance(found, NeedTexts):
            needed += found.paths
            continue
        roots |= set(found.roots)
        files |= set(found.files)
        problems += [p for p in found.problems if p not in problems]
        inflates = inflates or found.inflates
    if needed:
        return NeedTexts(tuple(dict.fromkeys(needed)))
    return RenderInputs(target, tuple(sorted(roots)), (), tuple(sorted(files)),
                        tuple(problems), job_of(target, inflates=inflates))
