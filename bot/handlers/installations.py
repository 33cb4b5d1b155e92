"""Installation events keep the index of deployment repositories current."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from ..context import Context
from ..github.client import ConveyorGitHubAPI

log = logging.getLogger(__name__)
router = routing.Router()


@router.register("installation", action="created")
@router.register("installation", action="unsuspend")
@router.register("installation_repositories", action="added")
@router.register("installation_repositories", action="removed")
async def on_installation_changed(event: sansio.Event, gh: ConveyorGitHubAPI, ctx: Context
                                  ) -> None:
    installation_id = event.data["installation"]["id"]
    for removed in event.data.get("repositories_removed") or []:
        ctx.policies.forget(installation_id, removed["full_name"])
    repos = await ctx.policies.load(gh, installation_id, force=True)
    log.info("deployment repositories indexed",
             extra={"installation": installation_id, "count": len(repos)})


@router.register("installation", action="deleted")
@router.register("installation", action="suspend")
async def on_installation_removed(event: sansio.Event, gh: ConveyorGitHubAPI, ctx: Context
                                  ) -> None:
    installation_id = event.data["installation"]["id"]
    ctx.policies.forget(installation_id)
    ctx.clients.auth.forget(installation_id)
