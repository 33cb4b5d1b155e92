"""Container `registry_package` / `package` events: a published image is a candidate.

GHCR announces a multi-arch push as one untagged event per platform, then one event per tag of
the index; GitHub sends each as both a `registry_package` and a `package` event. Only tagged
events are candidates. The source commit is `package_version.target_oid` when GitHub knows
it, else the image's `org.opencontainers.image.revision` label (the event's copy of the labels,
often empty, or the image configuration read from the registry).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from gidgethub import routing, sansio

from bot.domain.tags import version_from_tag
from bot.github.client import ConveyorGitHubAPI
from bot.promotion.opening.candidates import Candidate, package_event_facts, source_from_labels
from bot.promotion.triggers.flows import (
    find_release,
    promote_to_entry_environments,
    release_candidate,
)
from bot.registry.errors import RegistryError
from bot.registry.lookup import kind_problem
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()



@router.register("registry_package", action="published")
@router.register("registry_package", action="updated")
@router.register("package", action="published")
@router.register("package", action="updated")
async def on_package_published(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services
                               ) -> None:
    facts = package_event_facts(event.data)
    if facts is None:
        log.debug("not a tagged container image, ignored")
        return
    key = (facts["image"], facts["digest"], facts["tag"])
    if key in services.handled_images:
        log.debug("same image already handled from its twin event")
        return
    if facts["package_url"]:
        services.ctx.images.remember_package_page(facts["image"], facts["digest"],
                                                  str(facts["package_url"]))
    await _promote_package(event.data, facts, gh, services)
    services.handled_images[key] = True


async def _promote_package(data: dict[str, Any], facts: dict[str, Any], gh: ConveyorGitHubAPI,
                           services: Services) -> None:
    ctx = services.ctx
    installation_id = data["installation"]["id"]
    event_repo = (data.get("repository") or {}).get("full_name")
    label_repo, revision = source_from_labels(facts["labels"])
    revision = facts["target_oid"] or revision
    if revision is None or not (event_repo or label_repo):
        try:
            labelled = await ctx.images.provenance(facts["image"], facts["digest"])
        except RegistryError as exc:
            log.warning("image labels unavailable: %s", exc.message,
                        extra={"image": facts["image"]})
        else:
            label_repo = label_repo or labelled.source_repo
            revision = revision or labelled.revision
    for repo, service_name in await services.policies.services_for_image(
        gh, installation_id, facts["image"]
    ):
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
        if service.is_chart:  # the event says "container" for any OCI artifact
            try:
                version = await ctx.images.find_by_digest(service.image, facts["digest"])
            except RegistryError as exc:  # the event alone promotes, as for images
                log.warning("chart manifest unavailable, promoted on the event alone: %s",
                            exc.message, extra={"service": service_name})
                version = None
            if version is not None:
                candidate = replace(candidate, kind_refusal=kind_problem(
                    f"{service.image}:{facts['tag']}", version, chart=True))
        # A published release for this tag completes the candidate (release link, tag commit):
        # with `from: any` the package event is the one that opens the PR.
        completed = None
        if any(env.entry_from in ("release", "any") for env in repo.policy.environments.values()):
            release = await find_release(gh, service.source, service_name, facts["tag"])
            if release is not None:
                try:
                    completed = await release_candidate(ctx, gh, repo, service_name, release,
                                                        service.source)
                except RegistryError as exc:
                    log.warning("release image lookup failed: %s", exc.message,
                                extra={"service": service_name, "tag": facts["tag"]})
        same = completed if completed and completed.digest == candidate.digest else None
        if same is not None and same.package_url is None:
            same = replace(same, package_url=candidate.package_url)
        await promote_to_entry_environments(services.promoter, gh, repo, same or candidate,
                                            "package")
        if completed is not None and any(env.entry_from == "release"
                                         for env in repo.policy.environments.values()):
            await promote_to_entry_environments(services.promoter, gh, repo, completed,
                                                "release")
