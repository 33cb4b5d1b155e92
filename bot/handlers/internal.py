"""Internal jobs: timers (soak and freeze ends, merge retries) fed through the same queue."""

from __future__ import annotations

from dataclasses import dataclass

from gidgethub import sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import indexed_repo
from bot.handlers.routes import Declared
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.opening.merger import merge_promotion
from bot.promotion.policies import PolicyIndex
from bot.runtime.context import Context
from bot.runtime.scheduler import internal_event
from bot.runtime.timer_jobs import GateRecheck, MergeRetry


@dataclass(frozen=True)
class Timers:
    ctx: Context
    policies: PolicyIndex
    gates: GateService

    async def on_recheck_timer(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        recheck = GateRecheck.of(event.data)
        repo = await indexed_repo(event, gh, self.policies)
        if repo is not None:
            await self.gates.evaluate(gh, repo, recheck.number)

    async def on_merge_retry(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        retry = MergeRetry.of(event.data)
        await merge_promotion(self.ctx, gh, retry.full_name, retry.number, retry.head, retry.method,
                              environment=retry.environment, attempt=retry.attempt,
                              gated=retry.gated)


DECLARED = (
    Declared("internal.merge_retry", Timers.on_merge_retry,
             on=((internal_event(MergeRetry), None),)),
    Declared("internal.recheck", Timers.on_recheck_timer,
             on=((internal_event(GateRecheck), None),)),
)
