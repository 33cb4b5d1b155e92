"""Installation events keep the index of deployment repositories current."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.github.client import ConveyorGitHubAPI
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()


@router.register("installation", action="created")
@router.register("installation", action="unsuspend")
async def on_installation_created(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services
                                  ) -> None:
    installation_id = event.data["installation"]["id"]
    repos = await services.policies.load(gh, installation_id, force=True)
    log.info("deployment repositories indexed",
             extra={"installation": installation_id, "count": len(repos)})


@router.register("installation_repositories", action="added")
@router.register("installation_repositories", action="removed")
async def on_repositories_changed(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services
                                  ) -> None:
    """Only the repositories the event names are read (or forgotten): the installation's
    list is not read again for each of them, and one GraphQL query asks which of 100 added
    repositories hold a policy."""
    installation_id = event.data["installation"]["id"]
    services.policies.removed(installation_id, [str(r["full_name"]) for r in
                                           event.data.get("repositories_removed") or []])
    added = [(str(r["full_name"]), str(r.get("node_id") or ""))
             for r in event.data.get("repositories_added") or []]
    await services.policies.added(gh, installation_id, added)


@router.register("installation", action="deleted")
@router.register("installation", action="suspend")
async def on_installation_removed(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services
                                  ) -> None:
    installation_id = event.data["installation"]["id"]
    services.policies.forget(installation_id)
    services.ctx.clients.auth.forget(installation_id)
