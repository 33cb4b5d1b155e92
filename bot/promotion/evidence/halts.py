"""Whether a standing failure mark stops `promote: auto` before an environment: a halted wave
stays halted until `/unhold`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.promotion.evidence.finder import EvidenceFinder
from bot.promotion.policies import DeploymentRepo

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)


async def halted(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, environment: str,
                 moves: list[tuple[str, str]]) -> bool:
    """Whether any (service, digest) of ``moves`` holds a standing failure mark in an
    environment before ``environment``: `promote: auto` opens nothing there then."""
    policy = repo.policy
    watched = [name for name in policy.ancestors(environment)
               if policy.environments[name].on_failure is not None]
    if not watched:
        return False
    finder = EvidenceFinder(gh, repo.full_name, repo.default_branch, policy, ctx.web_url,
                            own_login=ctx.bot_login, own_app_id=ctx.app_id)
    for service, digest in moves:
        if service not in policy.services:
            continue
        marks = await finder.find_failure_marks(
            service, watched, policy.services[service].image, digest)
        if marks:
            log.warning("promote: auto halted by a failure mark", extra={
                "env": environment, "service": service, "digest": digest,
                "detail": "; ".join(f"reported failing in {m.environment}" for m in marks)})
            return True
    return False
