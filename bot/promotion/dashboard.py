"""The dashboard issue: one issue labelled `conveyor-dashboard` per deployment repository whose
body is the status tables, kept current by editing it in place.

Found by its label and hidden marker, created when missing, edited only when its text changes.
Updates are debounced: a burst of promotion changes schedules one internal `dashboard` job a
few seconds after the first of them. REST has no endpoint to pin an issue (only GraphQL's
`pinIssue`), so pinning is left to a maintainer, once; Conveyor keeps editing the same issue.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from .delivery_board import render_section
from .policies import DeploymentRepo
from .status import collect_status, render_status

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

DASHBOARD_LABEL = "conveyor-dashboard"
DASHBOARD_MARKER = "<!-- conveyor:dashboard -->"
DASHBOARD_TITLE = "Conveyor dashboard"
DEBOUNCE = timedelta(seconds=5)
DASHBOARD_EVENT = "dashboard"


def render_dashboard(repo: str, status: str, delivery: str | None = None) -> str:
    """``delivery``: the delivery section, once its figures have been read."""
    return "\n".join([
        f"What runs where in **{repo}**, per service and environment, as the default branch "
        "says. Conveyor edits this issue after every promotion change; edits by hand are "
        "overwritten.",
        "",
        status,
        "",
        "Ask for the same table in any issue or pull request with `/status [service]`.",
        "",
        *([delivery, ""] if delivery else []),
        DASHBOARD_MARKER,
    ])


def is_dashboard(issue: dict[str, Any], bot_login: str) -> bool:
    """Our dashboard: an issue (not a PR) carrying the marker; by the app when we know it."""
    if "pull_request" in issue or DASHBOARD_MARKER not in (issue.get("body") or ""):
        return False
    author = str((issue.get("user") or {}).get("login") or "")
    return not bot_login or author.lower() == bot_login.lower()


async def find_dashboard(ctx: Context, gh: GitHubAPI, repo: str) -> dict[str, Any] | None:
    """The oldest open dashboard issue of the repository."""
    found = [issue async for issue in gh.getiter(
        f"/repos/{repo}/issues?labels={quote(DASHBOARD_LABEL)}&state=open&per_page=100")
        if is_dashboard(issue, ctx.bot_login)]
    return min(found, key=lambda issue: int(issue["number"])) if found else None


async def refresh_dashboard(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo
                            ) -> dict[str, Any] | None:
    """Create or edit the dashboard issue; None when the repository has no valid policy."""
    if repo.policy is None:
        return None
    async with ctx.locks.hold(f"dashboard:{repo.full_name}"):
        snapshot = ctx.delivery.get(repo.full_name)
        body = render_dashboard(repo.full_name,
                                render_status(await collect_status(ctx, gh, repo)),
                                render_section(snapshot) if snapshot is not None else None)
        issue = await find_dashboard(ctx, gh, repo.full_name)
        if issue is None:
            created: dict[str, Any] = await gh.post(f"/repos/{repo.full_name}/issues", data={
                "title": DASHBOARD_TITLE, "body": body, "labels": [DASHBOARD_LABEL],
            })
            log.info("dashboard issue created",
                     extra={"repository": repo.full_name, "issue": created.get("number")})
            return created
        if (issue.get("body") or "").replace("\r\n", "\n") == body:
            return issue
        edited: dict[str, Any] = await gh.patch(
            f"/repos/{repo.full_name}/issues/{issue['number']}", data={"body": body})
        log.info("dashboard issue updated",
                 extra={"repository": repo.full_name, "issue": issue["number"]})
        return edited


def schedule_dashboard(ctx: Context, installation_id: int, repo: str) -> None:
    """Refresh the dashboard a few seconds from now; a burst of changes makes one refresh.

    A refresh already pending is left as it is, so that a steady stream of changes cannot
    postpone the update forever; it reads GitHub when it runs and so sees all of them.
    """
    key = f"dashboard:{repo.lower()}"
    if key in ctx.scheduler.pending():
        return
    ctx.scheduler.at(key, ctx.clock() + DEBOUNCE, DASHBOARD_EVENT, {
        "installation": {"id": installation_id}, "repository": {"full_name": repo},
    })
