"""What a sync object's source renders, if it is this repository's, and which environment's
place it points at (pure).

A source follows this repository when its URL names it on any host (``https://host/o/r``,
with or without ``.git``, ``git@host:o/r``, ``ssh://git@host/o/r``) and its default branch
(no revision, ``HEAD``, the branch, ``refs/heads/<branch>``). What it renders then is found
the way Argo CD finds it: a Helm chart where the folder holds ``Chart.yaml`` (or the source
says ``helm``), a Kustomize overlay where it holds a kustomization, else the folder's
manifests (Flux: every manifest below it).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from bot.render.charts import CHART_FILE, value_file_path
from bot.render.inputs import TreeIndex
from bot.render.syncs import Follow
from bot.render.targets import ChartTarget, FolderTarget, OverlayTarget, Target, target_folder

_SCP = re.compile(r"^[\w.-]+@[\w.-]+:(?P<path>.+)$")


def repository_of(url: str) -> str | None:
    """``owner/name`` of a Git URL, lower-cased; None when it names no such path."""
    text = url.strip()
    found = _SCP.match(text)
    if found:
        path = found["path"]
    elif "://" in text:
        path = text.split("://", 1)[1].split("/", 1)[1] if "/" in text.split("://", 1)[1] \
            else ""
    else:
        return None
    parts = [part for part in path.strip("/").removesuffix(".git").split("/") if part]
    return "/".join(parts[-2:]).lower() if len(parts) >= 2 else None


@dataclass(frozen=True)
class Here:
    """This repository and its default branch, as sources are matched against them."""

    full_name: str
    default_branch: str

    def same(self, url: str) -> bool:
        return repository_of(url) == self.full_name.lower()

    def default(self, revision: str) -> bool:
        return revision.strip() in ("", "HEAD", self.default_branch,
                                    f"refs/heads/{self.default_branch}")

    def follows(self, url: str, revision: str) -> bool:
        return self.same(url) and self.default(revision)


def follow_target(follow: Follow, url: str, revision: str, here: Here, index: TreeIndex
                  ) -> Target | str:
    """What ``follow`` renders in this repository at ``index``; or, as a sentence to follow
    "it would follow", why Conveyor cannot render it."""
    if follow.chart is not None:
        return f"the chart `{follow.chart}` of {url or 'a Helm repository'}, which Conveyor " \
               "does not fetch"
    if not here.same(url):
        return f"another repository ({url or 'not named'})"
    if not here.default(revision):
        return (f"revision `{revision}` of this repository, not its default branch "
                f"`{here.default_branch}`")
    if follow.problems:
        return f"a source Conveyor cannot render: {follow.problems[0]}"
    if follow.path is None or follow.path not in index.folders:
        return f"the folder `{follow.path or '?'}`, which this repository does not have"
    folder = follow.path
    chart = (posixpath.join(folder, CHART_FILE) if folder else CHART_FILE) in index.sizes
    overlay = index.kustomization_in(folder) is not None
    if follow.tool == "helm" or (follow.tool == "auto" and chart and not follow.recurse):
        return _chart(follow, folder, here)
    if follow.tool == "kustomize" or overlay:
        return OverlayTarget(folder, follow.options)
    if follow.options:
        return f"the manifests of `{folder}` with Kustomize settings Conveyor does not apply " \
               "without a kustomization"
    return FolderTarget(folder, follow.recurse)


def _chart(follow: Follow, folder: str, here: Here) -> ChartTarget | str:
    files = []
    for entry in follow.value_files:
        if entry.startswith("$"):
            name, _, rest = entry[1:].partition("/")
            ref = next((r for r in follow.refs if r[0] == name), None)
            if ref is None or not here.follows(ref[1], ref[2]):
                return f"the values file `{entry}` of another source, which Conveyor does not read"
            path = value_file_path("", rest)
        else:
            path = value_file_path(follow.base, entry)
        if path is None:
            return f"the values file `{entry}`, outside this repository"
        files.append(path)
    return ChartTarget(folder, tuple(files), follow.release or posixpath.basename(folder),
                       follow.namespace or "default", follow.inline, follow.parameters,
                       follow.replace_defaults)


@dataclass(frozen=True)
class Place:
    """Where one gated environment's files are rendered from: its render's target, or the
    folder of a file judged as it is."""

    environment: str
    services: tuple[str, ...]
    files: tuple[str, ...]
    target: Target | None  # None: plain files, synced as they are

    @property
    def folder(self) -> str:
        if self.target is not None:
            return target_folder(self.target)
        return posixpath.dirname(self.files[0])


def points_at(target: Target, place: Place, claimed: frozenset[str]) -> bool:
    """Whether a source rendering ``target`` deploys ``place`` (``claimed``: every policy
    file, to tell a chart's environments apart by the value files a source names)."""
    if isinstance(place.target, ChartTarget):
        if not isinstance(target, ChartTarget) or target.chart != place.target.chart:
            return False
        # A source names the environments whose files it takes beyond the chart's defaults;
        # it is the defaults' environment's only when it takes no other environment's file.
        defaults = posixpath.join(target.chart, "values.yaml") if target.chart else "values.yaml"
        taken = set(target.value_files)
        if (set(place.files) & taken) - {defaults}:
            return True
        return defaults in place.files and not (taken & claimed) - set(place.files) - {defaults}
    folder = target_folder(target)
    if place.target is not None:
        return not isinstance(target, ChartTarget) and folder == place.folder
    if isinstance(target, FolderTarget) and target.recurse:
        return place.folder == folder or place.folder.startswith(folder + "/") or not folder
    return folder == place.folder
