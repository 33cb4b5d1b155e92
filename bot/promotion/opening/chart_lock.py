"""An umbrella chart's `Chart.lock`: Helm installs the dependency versions the lock file
records, so a promotion that edits `Chart.yaml` alone would leave the lock saying the old
version (and digest). Such a promotion is refused with what to do instead."""

from __future__ import annotations

import posixpath

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Service
from bot.github.repos import get_file


async def lock_refusal(gh: GitHubAPI, repo: str, service: Service, path: str,
                       ref: str | None) -> str | None:
    """Why editing ``path`` would leave a stale `Chart.lock` beside it, or None."""
    if not service.is_chart or posixpath.basename(path) != "Chart.yaml":
        return None
    lock = posixpath.join(posixpath.dirname(path), "Chart.lock")
    if await get_file(gh, repo, lock, ref) is None:
        return None
    return (f"`{lock}` records the dependency versions Helm installs and would still name "
            f"the old {service.name}; run `helm dependency update` where the chart is "
            "built and remove the lock from the repository, or name the chart in an Argo CD "
            "Application, a Flux HelmRelease or a helmfile instead")
