"""Container `registry_package` / `package` events: a published image is a candidate."""

from __future__ import annotations

import logging

import cachetools
from gidgethub import routing, sansio

from ..context import Context
from ..domain.tags import version_from_tag
from ..github.client import ConveyorGitHubAPI
from ..promotion.candidates import Candidate, package_event_facts, source_from_labels
from ..promotion.flows import find_release, promote_to_entry_environments

log = logging.getLogger(__name__)
router = routing.Router()

# GitHub sends both a `registry_package` and a `package` event for one push: handle it once.
_recent: cachetools.TTLCache[tuple[str, str, str], bool] = cachetools.TTLCache(
    maxsize=10_000, ttl=600
)


@router.register("registry_package", action="published")
@router.register("registry_package", action="updated")
@router.register("package", action="published")
@router.register("package", action="updated")
async def on_package_published(event: sansio.Event, gh: ConveyorGitHubAPI, ctx: Context) -> None:
    facts = package_event_facts(event.data)
    if facts is None:
        log.debug("not a tagged container image, ignored")
        return
    key = (facts["image"], facts["digest"], facts["tag"])
    if key in _recent:
        log.debug("same image already handled from its twin event")
        return
    _recent[key] = True
    installation_id = event.data["installation"]["id"]
    event_repo = (event.data.get("repository") or {}).get("full_name")
    label_repo, revision = source_from_labels(facts["labels"])
    for repo, service_name in await ctx.policies.services_for_image(
        gh, installation_id, facts["image"]
    ):
        assert repo.policy is not None
        service = repo.policy.services[service_name]
        published_from = event_repo or label_repo
        if not published_from or published_from.lower() != service.source.lower():
            log.warning("image event from a repository that does not feed the service, ignored",
                        extra={"service": service_name, "from": published_from,
                               "source": service.source})
            continue
        if not service.tags.admits(facts["tag"]):
            log.info("image tag not admitted by the service's tag policy",
                     extra={"service": service_name, "tag": facts["tag"]})
            continue
        candidate = Candidate(
            service=service_name, image=service.image, digest=facts["digest"], tag=facts["tag"],
            version=version_from_tag(facts["tag"]), source_repo=service.source,
            trigger="package", source_sha=revision, package_url=facts["package_url"],
            published_at=facts["published_at"],
        )
        # A published release for this tag completes the candidate (release link, tag commit):
        # with `from: any` the package event is the one that opens the PR.
        completed = None
        if any(env.entry_from in ("release", "any") for env in repo.policy.environments.values()):
            release = await find_release(gh, service.source, service_name, facts["tag"])
            if release is not None:
                from ..promotion.flows import release_candidate

                completed = await release_candidate(ctx, gh, repo, service_name, release,
                                                    service.source)
        same = completed if completed and completed.digest == candidate.digest else None
        await promote_to_entry_environments(ctx, gh, repo, same or candidate, "package")
        if completed is not None and any(env.entry_from == "release"
                                         for env in repo.policy.environments.values()):
            await promote_to_entry_environments(ctx, gh, repo, completed, "release")
