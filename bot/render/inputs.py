"""Which files of a repository tree one Kustomize build reads, worked out from the build's own
kustomization files (pure).

Kustomize's root-only load restrictor (the default, and the only mode Conveyor builds with)
lets a kustomization read files only in or below its own folder; other folders enter a build
only as kustomizations of their own (``resources``, ``bases``, ``components``, ``generators``,
``transformers``, ``validators`` entries naming a folder). So the folders of every
kustomization a build reaches — its *roots* — hold everything it can read, and a change to a
file below a root can change what the build deploys. The build runs on a copy of exactly the
files below its roots; an entry this walk fails to follow is a folder missing from that copy,
which fails the build (closed), never a file the gate overlooks.

Remote bases and charts kustomize would pull are found here and reported: they are never
fetched. So is a symbolic link or a submodule a kustomization names: the copy holds files as
GitHub stores them and never follows one. ``helmCharts`` whose chart is kept below the
kustomization (``helmGlobals.chartHome``, ``charts/`` by default: the load restrictor keeps it
there) are inflated with Helm.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.yamlread.data import DataBuilder
from bot.yamlread.nodes import MAX_NODES, YamlError, parse

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Entries that may name a folder holding a kustomization of its own.
FOLDER_FIELDS = ("resources", "bases", "components", "generators", "transformers", "validators")
# What one build may copy: far more than any overlay, far less than a disk.
MAX_BUILD_FILES = 5000
MAX_BUILD_BYTES = 32 * 1024 * 1024
SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"

# A resource kustomize would fetch: a URL, an scp-like git address, or host/path.
_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|git@|[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?/)", re.I)


class TreeIndex:
    """The paths of one commit's tree (blobs with their sizes), with its folders; ``modes``:
    the git mode of each entry that is not a regular file (a symbolic link, among the blobs;
    a submodule, not)."""

    def __init__(self, sizes: Mapping[str, int], modes: Mapping[str, str] | None = None
                 ) -> None:
        self.sizes = dict(sizes)
        self.modes = dict(modes or {})
        self._sorted = sorted(self.sizes)
        self.folders: set[str] = {""}
        for path in self._sorted:
            parent = posixpath.dirname(path)
            while parent not in self.folders:
                self.folders.add(parent)
                parent = posixpath.dirname(parent)

    def under(self, folder: str) -> list[str]:
        """Every file in or below ``folder`` ('' is the repository root)."""
        if not folder:
            return list(self._sorted)
        prefix = folder + "/"
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, prefix + "\U0010ffff")
        return self._sorted[start:end]

    def not_a_file(self, path: str) -> str | None:
        """Why a render cannot take ``path`` as GitHub stores it: it is, or lies in, a
        symbolic link or a submodule; None otherwise."""
        at = path
        while at:
            if at in self.modes:
                return unjudged_entry(at, self.modes[at])
            at = posixpath.dirname(at)
        return None

    def kustomization_in(self, folder: str) -> str | None:
        for name in KUSTOMIZATION_NAMES:
            path = posixpath.join(folder, name) if folder else name
            if path in self.sizes:
                return path
        return None


def unjudged_entry(path: str, mode: str) -> str:
    """Why a render reading the tree entry ``path`` of git mode ``mode`` cannot be judged: a
    checkout (Argo CD's, Flux's) follows a symbolic link and clones a submodule, while the
    render's copy holds a link's target path as the file's text and nothing of a submodule."""
    if mode == SYMLINK_MODE:
        return (f"`{path}` is a symbolic link: Conveyor renders files as GitHub stores them "
                "and cannot judge a link; replace it with the file")
    if mode == SUBMODULE_MODE:
        return (f"`{path}` is a submodule: Conveyor renders files as GitHub stores them and "
                "cannot judge another repository's files; replace it with the files")
    return f"`{path}` is not a regular file (git mode {mode}): Conveyor cannot judge it"


def overlay_folder(index: TreeIndex, path: str) -> str | None:
    """The overlay an environment's file belongs to: the folder holding a kustomization file
    (the file itself, or one beside it); None when the file is not part of a Kustomize overlay
    at this commit (a Helm values file, a plain manifest synced as it is, a missing file)."""
    folder = posixpath.dirname(path)
    return folder if index.kustomization_in(folder) is not None else None


@dataclass(frozen=True)
class BuildInputs:
    """One build's inputs at one commit."""

    overlay: str
    roots: tuple[str, ...]  # the folders of every kustomization the build reaches
    files: tuple[str, ...]  # every file below a root: what the private copy holds
    problems: tuple[str, ...]  # why the build cannot be run (remote, too large…)
    inflates: bool = False  # a kustomization inflates local `helmCharts` with Helm

    def reads(self, path: str) -> bool:
        """Whether a change to ``path`` can change this build."""
        return any(not root or path == root or path.startswith(root + "/")
                   for root in self.roots)


@dataclass(frozen=True)
class NeedTexts:
    """The walk needs these kustomization files' texts before it can go on."""

    paths: tuple[str, ...]


def build_inputs(index: TreeIndex, overlay: str, texts: Mapping[str, str | None]
                 ) -> BuildInputs | NeedTexts:
    """The inputs of building ``overlay``, given the texts of the kustomization files read so
    far (None: unreadable); or the kustomization files to read next."""
    roots: list[str] = []
    problems: list[str] = []
    needed: list[str] = []
    inflates = False
    pending = [overlay]
    while pending:
        folder = pending.pop()
        if folder in roots:
            continue
        roots.append(folder)
        kustomization = index.kustomization_in(folder)
        if kustomization is None:
            problems.append(f"`{folder or '.'}` has no kustomization file")
            continue
        if kustomization not in texts:
            needed.append(kustomization)
            continue
        data = top_mapping(texts[kustomization])
        inflates = _helm_charts(kustomization, data, problems) or inflates
        for entry in _folder_entries(data):
            target = resolve(folder, entry)
            entered = index.not_a_file(target) if target else None
            if entered is not None:
                problems += [entered] if entered not in problems else []
            elif target is not None and target in index.folders:
                pending.append(target)
            elif target is not None and target in index.sizes:
                continue  # a file: below its kustomization's root, or refused by kustomize
            elif _REMOTE.match(entry):
                problems.append(f"`{kustomization}` names the remote resource `{entry}`, "
                                "which Conveyor does not fetch")
            elif target is None:
                problems.append(f"`{kustomization}` names `{entry}`, outside the repository")
    if needed:
        return NeedTexts(tuple(dict.fromkeys(needed)))
    files = sorted({path for root in roots for path in index.under(root)})
    if len(files) > MAX_BUILD_FILES:
        problems.append(f"the build of `{overlay}` reads {len(files)} files, more than "
                        f"{MAX_BUILD_FILES}")
    elif sum(index.sizes[path] for path in files) > MAX_BUILD_BYTES:
        problems.append(f"the build of `{overlay}` reads more than "
                        f"{MAX_BUILD_BYTES // (1024 * 1024)} MB")
    return BuildInputs(overlay, tuple(sorted(roots)), tuple(files), tuple(problems), inflates)


def _helm_charts(kustomization: str, data: Mapping[str, Any], problems: list[str]) -> bool:
    """Whether the kustomization inflates charts kept below it (``helmCharts`` without a
    ``repo``: kustomize renders them from ``helmGlobals.chartHome`` with Helm); a chart it
    would pull from a repository, and the retired ``helmChartInflationGenerator``, are
    problems."""
    if "helmChartInflationGenerator" in data:
        problems.append(f"`{kustomization}` uses `helmChartInflationGenerator`, which "
                        "Conveyor does not render: use `helmCharts` with a chart kept in the "
                        "repository")
    charts = data.get("helmCharts")
    if not isinstance(charts, list):
        return False
    for chart in charts:
        if isinstance(chart, dict) and chart.get("repo"):
            problems.append(f"`{kustomization}` inflates the chart `{chart.get('name')}` from "
                            f"{chart['repo']}, which Conveyor does not fetch")
    return bool(charts)


def top_mapping(text: str | None) -> dict[str, Any]:
    """The first document's top-level mapping of a YAML file (a kustomization, a Chart.yaml);
    an unreadable one is empty, left to the tool to report."""
    if text is None:
        return {}
    try:
        stream = parse(text)
    except YamlError:
        return {}
    if not stream.documents:
        return {}
    data = DataBuilder(MAX_NODES).build(stream.documents[0].root)
    return dict(data) if isinstance(data, dict) else {}


def _folder_entries(data: Mapping[str, Any]) -> Iterable[str]:
    for field in FOLDER_FIELDS:
        entries = data.get(field)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            # Inline generator and transformer configurations are mappings or YAML text.
            if isinstance(entry, str) and "\n" not in entry and entry.strip():
                yield entry.strip()


def resolve(folder: str, entry: str) -> str | None:
    """``entry`` relative to ``folder`` as a repository path; None when it leaves the
    repository (or is absolute)."""
    if entry.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(folder, entry)) if folder else (
        posixpath.normpath(entry))
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith("../"):
        return None
    return joined
