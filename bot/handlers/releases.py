"""`release` events in source repositories: a published release names a version to promote."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gidgethub import sansio

from bot.domain.tags import tag_prefix
from bot.github.client import ConveyorGitHubAPI
from bot.handlers.routes import Declared
from bot.promotion.policies import PolicyIndex
from bot.promotion.triggers.flows import (
    Promoter,
    promote_to_entry_environments,
    release_candidate,
    report_lookup_failure,
)
from bot.registry.errors import RegistryError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Releases:
    policies: PolicyIndex
    promoter: Promoter

    async def on_release_published(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        release = event.data["release"]
        if release.get("draft"):
            return
        source = event.data["repository"]["full_name"]
        installation_id = event.data["installation"]["id"]
        targets = await self.policies.services_for_source(gh, installation_id, source)
        if not targets:
            log.debug("no service is fed by this repository", extra={"repository": source})
            return
        prefix = tag_prefix(release["tag_name"])
        for repo, service in targets:
            tags = repo.policy.services[service].tags
            if prefix is not None and tags.kind != "regexp" \
                    and prefix.lower() != service.lower():
                # A monorepo release (api-v1.5.0) feeds the service it names, not its siblings.
                continue
            if not tags.admits(release["tag_name"]):
                log.info("release tag not admitted by the service's tag policy",
                         extra={"service": service, "tag": release["tag_name"]})
                continue
            try:
                candidate = await release_candidate(self.promoter.ctx, gh, repo, service,
                                                    release, source)
            except RegistryError as exc:
                await report_lookup_failure(self.promoter, gh, repo, service, release, source,
                                            exc)
                continue
            if candidate is not None:
                await promote_to_entry_environments(self.promoter, gh, repo, candidate,
                                                    "release")


# GitHub sends `published` and then `released` or `prereleased` for one release; handling the
# latter two sees every release once, including a prerelease later turned into a release.
DECLARED = (
    Declared("releases.published", Releases.on_release_published,
             on=(("release", "released"), ("release", "prereleased"))),
)
