"""Merging Conveyor's own promotion PRs (auto_merge), guarded by the head sha."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING

import gidgethub
from gidgethub.abc import GitHubAPI

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

RETRY_AFTER = timedelta(seconds=15)


async def merge_promotion(ctx: Context, gh: GitHubAPI, repo: str, number: int, expected_head: str,
                          method: str) -> bool:
    """Merge if the head is still the commit Conveyor made; schedule a retry while GitHub is
    still computing mergeability. A PR a human has pushed to is never merged."""
    try:
        await gh.put(f"/repos/{repo}/pulls/{number}/merge",
                     data={"sha": expected_head, "merge_method": method})
    except gidgethub.BadRequest as exc:
        if exc.status_code == 409:
            log.info("not merging: the head changed since Conveyor's commit",
                     extra={"repository": repo, "pull": number})
            return False
        if exc.status_code in (405, 422):
            log.info("not mergeable yet, retrying later",
                     extra={"repository": repo, "pull": number, "reason": str(exc)})
            installation = getattr(gh, "installation_id", None)
            ctx.scheduler.at(f"merge:{repo}#{number}", ctx.clock() + RETRY_AFTER, "merge",
                             {"repository": {"full_name": repo}, "number": number,
                              "head": expected_head, "method": method,
                              "installation": {"id": installation}})
            return False
        raise
    ctx.metrics.promotions.labels("any", "merged").inc()
    log.info("promotion merged", extra={"repository": repo, "pull": number})
    return True
