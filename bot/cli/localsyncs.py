"""A checkout's environments rendered as the bot renders them from the default branch: a chart
environment as the Argo CD Application or Flux HelmRelease of the repository says.

The objects name their source by URL and revision; the checkout is recognised in them by its
`origin` remote (as `git clone` and GitHub Actions' checkout set it) and its default branch
(`origin/HEAD`, else the branch checked out). A checkout without an `origin` remote renders
every environment from its policy file alone, and says so.
"""

from __future__ import annotations

import posixpath
import subprocess
from pathlib import Path

from bot.domain.policy import Policy
from bot.github.repos import MAX_FILE_BYTES
from bot.promotion.builds import (
    MAX_SCANNED_FILES,
    EnvironmentRender,
    Files,
    chart_pointers,
    may_point_at_charts,
    policy_renders,
)
from bot.render.charts import CHART_FILE
from bot.render.inputs import TreeIndex
from bot.render.pointers import Here, repository_of
from bot.render.syncs import SyncObject, sync_objects

GIT_SECONDS = 10.0


def local_here(root: Path) -> Here | None:
    """The checkout as its Argo CD and Flux objects name it; None without an `origin` remote
    that names a repository (or without git)."""
    url = _git(root, "remote", "get-url", "origin")
    full_name = repository_of(url) if url else None
    if full_name is None:
        return None
    remote_head = _git(root, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD")
    branch = (remote_head.removeprefix("refs/remotes/origin/") if remote_head
              else _git(root, "symbolic-ref", "--quiet", "--short", "HEAD"))
    # without either, only objects that follow `HEAD` (or name no revision) are this one's
    return Here(full_name, branch or "")


def _git(root: Path, *args: str) -> str | None:
    """What a read-only git command prints (no hook or file-system monitor runs for it)."""
    command = ["git", "-c", "core.fsmonitor=false", "-C", str(root), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GIT_SECONDS,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


async def local_syncs(files: Files, index: TreeIndex) -> list[SyncObject]:
    """The Argo CD and Flux objects of the checkout's YAML files (none past
    `MAX_SCANNED_FILES` of them, as the bot scans a repository)."""
    paths = [path for path, size in sorted(index.sizes.items())
             if path.endswith((".yaml", ".yml")) and size <= MAX_FILE_BYTES]
    if len(paths) > MAX_SCANNED_FILES:
        return []
    texts = await files.texts(paths)
    return [obj for path in paths if (text := texts.get(path)) is not None
            for obj in sync_objects(path, text)]


def _render_local_charts(objects: list[SyncObject], index: TreeIndex) -> bool:
    """Whether an object renders, from git, a folder of the checkout that holds a chart: one
    that would say how a chart environment renders, were its source this repository."""
    return any(follow.chart is None and follow.path is not None
               and posixpath.join(follow.path, CHART_FILE) in index.sizes
               for obj in objects for _, follow in obj.follows)


async def local_renders(root: Path, files: Files, policy: Policy, index: TreeIndex
                        ) -> tuple[list[EnvironmentRender], str | None]:
    """Every (environment, target) of the checkout as the bot renders it, and a note when the
    Argo CD and Flux objects could not be read for it."""
    renders = policy_renders(policy, index)
    if not may_point_at_charts(policy, index, renders, gated_only=False):
        return renders, None
    objects = await local_syncs(files, index)
    if not objects:
        return renders, None
    here = local_here(root)
    if here is None:
        return renders, ("the Argo CD and Flux objects of the checkout, which may say how a "
                         "chart environment renders, are not read: it has no `origin` remote "
                         "naming its repository") if _render_local_charts(objects, index) \
            else None
    return chart_pointers(policy, index, renders, objects, here, gated_only=False), None
