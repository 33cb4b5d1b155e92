"""Closing a promotion PR that a newer one supersedes: said once, closed, its branch deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gidgethub.abc import GitHubAPI

from bot.domain.promotions.marker import parse_marker
from bot.github.refusals import or_none
from bot.github.repos import comment

if TYPE_CHECKING:
    from bot.runtime.context import Context


async def close_superseded(ctx: Context, gh: GitHubAPI, full_name: str, pr: dict[str, Any],
                           by_number: int) -> None:
    """Say which PR supersedes ``pr``, close it and delete its branch. Done again after a job
    died midway (by the resync), the comment is not repeated."""
    text = f"Superseded by #{by_number}."
    if not await _said(ctx, gh, full_name, int(pr["number"]), text):
        await comment(gh, full_name, int(pr["number"]), text)
    await gh.patch(f"/repos/{full_name}/pulls/{pr['number']}", data={"state": "closed"})
    await or_none(gh.delete(f"/repos/{full_name}/git/refs/heads/{pr['head']['ref']}"), 404, 422)
    marker = parse_marker(pr.get("body"))
    ctx.metrics.promotions.labels(marker.environment if marker else "unknown", "superseded").inc()


async def _said(ctx: Context, gh: GitHubAPI, full_name: str, number: int, text: str) -> bool:
    """Whether Conveyor's own comment on ``number`` says ``text`` already."""
    login = ctx.bot_login.lower()
    async for found in gh.getiter(f"/repos/{full_name}/issues/{number}/comments?per_page=100"):
        author = str((found.get("user") or {}).get("login") or "").lower()
        if login and author == login and found.get("body") == text:
            return True
    return False
