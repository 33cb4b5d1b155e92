"""Internal jobs: timers (soak and freeze ends, merge retries) fed through the same queue."""

from __future__ import annotations

from gidgethub import routing, sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import indexed_repo
from bot.promotion.opening.merger import merge_promotion
from bot.runtime.scheduler import INTERNAL_PREFIX
from bot.services import Services

router = routing.Router()


@router.register(INTERNAL_PREFIX + "recheck")
async def on_recheck_timer(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    repo = await indexed_repo(event, gh, services)
    if repo is not None:
        await services.gates.evaluate(gh, repo, int(event.data["number"]))


@router.register(INTERNAL_PREFIX + "merge")
async def on_merge_retry(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    await merge_promotion(services.ctx, gh, event.data["repository"]["full_name"],
                          int(event.data["number"]), event.data["head"], event.data["method"],
                          environment=str(event.data.get("environment") or "unknown"),
                          attempt=int(event.data.get("attempt") or 1),
                          gated=bool(event.data.get("gated")))
