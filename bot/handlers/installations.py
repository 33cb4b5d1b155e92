"""Installation events keep the index of deployment repositories current."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gidgethub import sansio

from bot.github.auth import AppAuth
from bot.github.client import ConveyorGitHubAPI
from bot.handlers.routes import Declared
from bot.promotion.policies import PolicyIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Installations:
    policies: PolicyIndex
    auth: AppAuth

    async def on_installation_created(self, event: sansio.Event, gh: ConveyorGitHubAPI
                                      ) -> None:
        installation_id = event.data["installation"]["id"]
        repos = await self.policies.load(gh, installation_id, force=True)
        log.info("deployment repositories indexed",
                 extra={"installation": installation_id, "count": len(repos)})

    async def on_repositories_changed(self, event: sansio.Event, gh: ConveyorGitHubAPI
                                      ) -> None:
        """Only the repositories the event names are read (or forgotten): the installation's
        list is not read again for each of them, and one GraphQL query asks which of 100 added
        repositories hold a policy."""
        installation_id = event.data["installation"]["id"]
        self.policies.removed(installation_id, [str(r["full_name"]) for r in
                                                event.data.get("repositories_removed") or []])
        added = [(str(r["full_name"]), str(r.get("node_id") or ""))
                 for r in event.data.get("repositories_added") or []]
        await self.policies.added(gh, installation_id, added)

    async def on_installation_removed(self, event: sansio.Event, gh: ConveyorGitHubAPI
                                      ) -> None:
        installation_id = event.data["installation"]["id"]
        self.policies.forget(installation_id)
        self.auth.forget(installation_id)


DECLARED = (
    Declared("installations.created", Installations.on_installation_created,
             on=(("installation", "created"), ("installation", "unsuspend"))),
    Declared("installations.removed", Installations.on_installation_removed,
             on=(("installation", "deleted"), ("installation", "suspend"))),
    Declared("installations.repositories", Installations.on_repositories_changed,
             on=(("installation_repositories", "added"),
                 ("installation_repositories", "removed"))),
)
