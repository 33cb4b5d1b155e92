"""The periodic, level-triggered reconcile: GitHub's state is the truth, events only hurry it.

For each deployment repository: the newest admitted release of every service is promoted into
the entry environments (idempotent: an open or live promotion costs only conditional reads), the
gate of every open PR is re-evaluated (restoring soak and freeze timers), and the dashboard is
refreshed. An idle resync makes only requests that GitHub answers with `304`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import gidgethub
from gidgethub.abc import GitHubAPI

from .downstream import reevaluate_open_pulls
from .flows import promote_to_entry_environments, release_candidate
from .policies import DeploymentRepo

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

RECENT_RELEASES = 10


async def resync_all(ctx: Context) -> int:
    """Reconcile every installation; returns the number of deployment repositories seen."""
    app = ctx.clients.app()
    seen = 0
    async for installation in app.getiter("/app/installations?per_page=100"):
        try:
            gh = await ctx.clients.installation(int(installation["id"]))
            seen += await resync_installation(ctx, gh, int(installation["id"]))
        except gidgethub.GitHubException as exc:
            log.warning("resync of an installation failed",
                        extra={"installation": installation.get("id"), "error": str(exc)})
    return seen


async def resync_installation(ctx: Context, gh: GitHubAPI, installation_id: int) -> int:
    repos = await ctx.policies.load(gh, installation_id, force=True)
    for repo in repos:
        if repo.policy is None:
            continue
        try:
            await resync_repo(ctx, gh, repo)
        except gidgethub.GitHubException as exc:
            log.warning("resync of a repository failed",
                        extra={"repository": repo.full_name, "error": str(exc)})
    return len(repos)


async def resync_repo(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo) -> None:
    assert repo.policy is not None
    for service in repo.policy.services.values():
        release = await _newest_admitted_release(gh, service.source, service.tags.admits)
        if release is None:
            continue
        candidate = await release_candidate(ctx, gh, repo, service.name, release,
                                            service.source)
        if candidate is not None:
            await promote_to_entry_environments(ctx, gh, repo, candidate, "release",
                                                report_refusals=False)
    await reevaluate_open_pulls(ctx, gh, repo)
    from .dashboard import refresh_dashboard

    await refresh_dashboard(ctx, gh, repo)


async def _newest_admitted_release(gh: GitHubAPI, source: str, admits: Any
                                   ) -> dict[str, Any] | None:
    try:
        releases = await gh.getitem(f"/repos/{source}/releases?per_page={RECENT_RELEASES}")
    except gidgethub.BadRequest as exc:
        if exc.status_code == 404:
            return None
        raise
    for release in releases:
        if not release.get("draft") and admits(release["tag_name"]):
            return dict(release)
    return None
