"""A promotion or train Conveyor has just opened into an ungated `auto_merge` environment:
its gate posted first, then merged. Where `conveyor/promotion-gate` is required, GitHub
refuses the merge of a PR that does not have it yet."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.opening.merger import merge_promotion
from bot.promotion.opening.opener import OpenedPull
from bot.promotion.policies import DeploymentRepo

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateThenMerge:
    """The openers' `MergeAsOpened`: not when the gate fails (the edit reaches a gated
    environment's render)."""

    ctx: Context
    gates: GateService

    async def __call__(self, gh: GitHubAPI, repo: DeploymentRepo, opened: OpenedPull) -> bool:
        if not await self.gates.post_own_commit(gh, repo, opened.number, opened.head_sha,
                                                opened.base_sha, opened.paths):
            log.info("not merging: the promotion changes a gated environment's render and "
                     "its gate does not pass", extra={"pull": opened.number,
                                                      "env": opened.env.name})
            return False
        return await merge_promotion(self.ctx, gh, repo.full_name, opened.number,
                                     opened.head_sha, opened.env.merge_method,
                                     environment=opened.env.name)
