"""Which files of a repository tree one ``helm template`` reads, and where an environment's
chart is (pure).

A chart is a folder holding ``Chart.yaml``. Helm reads every file below it — templates,
``_helpers.tpl``, ``values.yaml``, ``Chart.yaml``, vendored subcharts under ``charts/``,
files its templates read with ``.Files`` — and the value files it is given, which may lie
outside the chart (an Argo CD ``valueFiles`` entry ``../../envs/prod/values.yaml``, a Flux
``valuesFiles`` path from the repository's root). So the render's copy holds exactly those,
and a change to any of them can change what the chart deploys.

Dependencies are never fetched: one listed in ``Chart.yaml`` (or ``requirements.yaml``) that
nothing under ``charts/`` can stand for fails the render (closed) with its name and
repository; Helm itself refuses one that is missing when it loads the chart.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from bot.render.inputs import MAX_BUILD_BYTES, MAX_BUILD_FILES, TreeIndex, resolve, top_mapping

CHART_FILE = "Chart.yaml"
DEFAULT_VALUES = "values.yaml"
# Files of a chart that are not values files: a policy path naming one is not rendered as
# an environment's values.
CHART_OWN_FILES = ("Chart.yaml", "Chart.lock", "requirements.yaml", "requirements.lock",
                   "values.schema.json", ".helmignore")
CHART_OWN_FOLDERS = ("templates", "crds", "charts")


def chart_folder(index: TreeIndex, path: str) -> str | None:
    """The chart a values file belongs to: the nearest folder at or above it that holds a
    ``Chart.yaml``; None when there is none, or when ``path`` is one of the chart's own files
    (``Chart.yaml``, a template, a subchart's file) rather than a values file."""
    if not path.endswith((".yaml", ".yml")):
        return None
    folder = posixpath.dirname(path)
    while True:
        if (posixpath.join(folder, CHART_FILE) if folder else CHART_FILE) in index.sizes:
            relative = posixpath.relpath(path, folder) if folder else path
            first = relative.split("/", 1)[0]
            if relative in CHART_OWN_FILES or ("/" in relative and first in CHART_OWN_FOLDERS):
                return None
            return folder
        if not folder:
            return None
        folder = posixpath.dirname(folder)


def chart_file(chart: str) -> str:
    return posixpath.join(chart, CHART_FILE) if chart else CHART_FILE


@dataclass(frozen=True)
class ChartInputs:
    """One chart render's inputs at one commit."""

    chart: str
    value_files: tuple[str, ...]
    files: tuple[str, ...]  # every file below the chart and the value files: the copy
    problems: tuple[str, ...]

    def reads(self, path: str) -> bool:
        """Whether a change to ``path`` can change this render."""
        return (not self.chart or path.startswith(self.chart + "/")
                or path in self.value_files)


def chart_inputs(index: TreeIndex, chart: str, value_files: tuple[str, ...],
                 chart_text: str | None) -> ChartInputs:
    """The inputs of rendering ``chart`` with ``value_files`` (repository paths), given the
    text of its ``Chart.yaml`` (None: unreadable, left to Helm to report)."""
    problems: list[str] = []
    if chart_file(chart) not in index.sizes:
        problems.append(f"`{chart or '.'}` holds no {CHART_FILE}: it is not a chart")
    for path in value_files:
        if path not in index.sizes:
            problems.append(f"the values file `{path}` does not exist")
    problems += _unvendored(index, chart, chart_text)
    files = set(index.under(chart)) | {path for path in value_files if path in index.sizes}
    if len(files) > MAX_BUILD_FILES:
        problems.append(f"the render of `{chart or '.'}` reads {len(files)} files, more than "
                        f"{MAX_BUILD_FILES}")
    elif sum(index.sizes[path] for path in files) > MAX_BUILD_BYTES:
        problems.append(f"the render of `{chart or '.'}` reads more than "
                        f"{MAX_BUILD_BYTES // (1024 * 1024)} MB")
    return ChartInputs(chart, value_files, tuple(sorted(files)), tuple(problems))


def value_file_path(base: str, entry: str) -> str | None:
    """A values file named relative to ``base`` as a repository path; None when it is a URL,
    absolute or outside the repository (never read)."""
    if "://" in entry or entry.startswith("/"):
        return None
    return resolve(base, entry)


def _unvendored(index: TreeIndex, chart: str, text: str | None) -> list[str]:
    """The dependencies of the chart that nothing under its ``charts/`` can stand for."""
    data = top_mapping(text)
    dependencies = data.get("dependencies")
    if not isinstance(dependencies, list):
        return []
    vendored = posixpath.join(chart, "charts") if chart else "charts"
    present = {path[len(vendored) + 1:].split("/", 1)[0] for path in index.under(vendored)}
    problems = []
    for dependency in dependencies:
        if not isinstance(dependency, dict) or not isinstance(dependency.get("name"), str):
            continue
        name = dependency["name"]
        if name in present or any(entry.startswith(f"{name}-") and entry.endswith(".tgz")
                                  for entry in present):
            continue
        source = dependency.get("repository")
        where = f" from {source}" if isinstance(source, str) and source else ""
        problems.append(f"`{chart_file(chart)}` depends on `{name}`{where}, which is not "
                        f"vendored under `{vendored}/`: Conveyor does not fetch chart "
                        "dependencies")
    return problems
