"""A hold on a promotion PR: the label that makes the gate fail, the reason Conveyor's reply
gave, and the label put back when someone without write permission removes it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from gidgethub.abc import GitHubAPI

from bot.github.repos import WRITE_PERMISSIONS, add_labels, comment, is_bot, permission_of
from bot.promotion.gate.pull_facts import PullFacts

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

HOLD_LABEL = "conveyor/hold"
HOLD_MARKER = "<!-- conveyor:hold -->"


async def hold_of(gh: GitHubAPI, full_name: str, facts: PullFacts, bot_login: str
                  ) -> tuple[str | None, str | None]:
    """The reason and link of the PR's hold (None, None: not on hold)."""
    if HOLD_LABEL not in facts.labels:
        return None, None
    reason, url = "", None
    async for item in gh.getiter(f"/repos/{full_name}/issues/{facts.number}/comments?per_page=100"):
        body = item.get("body") or ""
        # Only Conveyor's own comments count; the reason is the rest of the marker's line.
        user = item.get("user") or {}
        own = user.get("login") == bot_login if bot_login else is_bot(user)
        if HOLD_MARKER in body and own:
            reason = body.split(HOLD_MARKER, 1)[1].split("\n", 1)[0].strip()
            reason = reason.removeprefix("Reason:").strip()
            url = item.get("html_url")
    return reason, url


async def keep_hold(ctx: Context, gh: GitHubAPI, full_name: str, number: int,
                    payload: dict[str, Any]) -> None:
    """Put `conveyor/hold` back when someone without write permission removed it.

    GitHub lets triage users manage labels; lifting a hold is `/unhold`'s job, which needs
    write, maintain or admin permission like every command."""
    if (payload.get("label") or {}).get("name") != HOLD_LABEL:
        return
    sender = payload.get("sender") or {}
    login = str(sender.get("login") or "")
    if not login or (ctx.bot_login and login.lower() == ctx.bot_login.lower()):
        return
    if await permission_of(gh, full_name, login) in WRITE_PERMISSIONS:
        return
    current = await gh.getitem(f"/repos/{full_name}/pulls/{number}")
    if current.get("state") != "open" or HOLD_LABEL in {
            label.get("name") for label in current.get("labels") or []}:
        return
    await add_labels(gh, full_name, number, [HOLD_LABEL])
    await comment(gh, full_name, number, (
        f"⏸️ @{login} removed `{HOLD_LABEL}` without write permission on the repository, so "
        f"the hold stays. Someone with write access lifts it with `/unhold`."))
    log.info("hold label put back", extra={"pull": number, "sender": login})
