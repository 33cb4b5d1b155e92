"""A published container image (a `registry_package` / `package` event) becomes promotions.

GHCR announces a multi-arch push as one untagged event per platform, then one event per tag of
the index; GitHub sends each as both a `registry_package` and a `package` event. Only tagged
events are candidates. The source commit is `package_version.target_oid` when GitHub knows
it, else the image's `org.opencontainers.image.revision` label (the event's copy of the labels,
often empty, or the image configuration read from the registry).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import cachetools
from gidgethub.abc import GitHubAPI

from bot.domain.policy import Service
from bot.domain.promotions.candidate import Candidate, package_event_facts, source_from_labels
from bot.domain.tags import version_from_tag
from bot.promotion.policies import DeploymentRepo, PolicyIndex
from bot.promotion.triggers.flows import (
    Promoter,
    find_release,
    promote_to_entry_environments,
    release_candidate,
)
from bot.registry.errors import RegistryError
from bot.registry.lookup import kind_problem

log = logging.getLogger(__name__)

# Tagged images whose package event was handled (its twin event, a redelivery), marked only
# once handled so that a retried job runs again: (image, digest, tag) → True.
HandledImages = cachetools.TTLCache[tuple[str, str, str], bool]


def handled_images() -> HandledImages:
    return cachetools.TTLCache(maxsize=10_000, ttl=600)


@dataclass(frozen=True)
class PublishedImage:
    """What a package event says of one tagged container image."""

    image: str
    digest: str
    tag: str
    installation: int
    labels: Mapping[str, Any]
    target_oid: str | None  # the source commit, when GitHub knows it
    package_url: str | None
    published_at: str | None
    event_repo: str | None  # the repository the event comes from

    @classmethod
    def of(cls, payload: dict[str, Any]) -> PublishedImage | None:
        """None for other package types and untagged manifests."""
        facts = package_event_facts(payload)
        if facts is None:
            return None
        package_url = facts["package_url"]
        return cls(image=str(facts["image"]), digest=str(facts["digest"]),
                   tag=str(facts["tag"]), installation=int(payload["installation"]["id"]),
                   labels=dict(facts["labels"]), target_oid=facts["target_oid"],
                   package_url=str(package_url) if package_url else None,
                   published_at=facts["published_at"],
                   event_repo=(payload.get("repository") or {}).get("full_name"))

    @property
    def key(self) -> tuple[str, str, str]:
        return self.image, self.digest, self.tag


@dataclass(frozen=True)
class Origin:
    """Where a published image says it comes from: its repository and commit, if known."""

    full_name: str | None
    revision: str | None


@dataclass(frozen=True)
class PackagePromoter:
    """Opens the promotions a published image is a candidate for, once per image and tag."""

    promoter: Promoter
    policies: PolicyIndex
    handled: HandledImages = field(default_factory=handled_images)

    async def promote(self, gh: GitHubAPI, published: PublishedImage) -> None:
        if published.key in self.handled:
            log.debug("same image already handled from its twin event")
            return
        images = self.promoter.ctx.images
        if published.package_url:
            images.remember_package_page(published.image, published.digest,
                                         published.package_url)
        origin = await self._origin(published)
        for repo, name in await self.policies.services_for_image(gh, published.installation,
                                                                 published.image):
            service = repo.policy.services[name]
            if self._admits(service, published, origin):
                await self._promote_service(gh, repo, service, published, origin)
        self.handled[published.key] = True

    async def _origin(self, published: PublishedImage) -> Origin:
        """The event's repository and commit, else the labels', else the image's own."""
        label_repo, revision = source_from_labels(dict(published.labels))
        revision = published.target_oid or revision
        if revision is None or not (published.event_repo or label_repo):
            try:
                labelled = await self.promoter.ctx.images.provenance(published.image,
                                                                     published.digest)
            except RegistryError as exc:
                log.warning("image labels unavailable: %s", exc.message,
                            extra={"image": published.image})
            else:
                label_repo = label_repo or labelled.source_repo
                revision = revision or labelled.revision
        return Origin(published.event_repo or label_repo, revision)

    @staticmethod
    def _admits(service: Service, published: PublishedImage, origin: Origin) -> bool:
        if not origin.full_name or origin.full_name.lower() != service.source.lower():
            log.warning("image event from a repository that does not feed the service, ignored",
                        extra={"service": service.name, "from": origin.full_name,
                               "source": service.source})
            return False
        if not service.tags.admits(published.tag):
            log.info("image tag not admitted by the service's tag policy",
                     extra={"service": service.name, "tag": published.tag})
            return False
        return True

    async def _promote_service(self, gh: GitHubAPI, repo: DeploymentRepo, service: Service,
                               published: PublishedImage, origin: Origin) -> None:
        candidate = await self._candidate(service, published, origin)
        # A published release for this tag completes the candidate (release link, tag
        # commit): with `from: any` the package event is the one that opens the PR.
        completed = await self._completed_by_release(gh, repo, service, published)
        same = completed if completed and completed.digest == candidate.digest else None
        if same is not None and same.package_url is None:
            same = replace(same, package_url=candidate.package_url)
        await promote_to_entry_environments(self.promoter, gh, repo, same or candidate,
                                            "package")
        if completed is not None and any(env.entry_from == "release"
                                         for env in repo.policy.environments.values()):
            await promote_to_entry_environments(self.promoter, gh, repo, completed, "release")

    async def _candidate(self, service: Service, published: PublishedImage, origin: Origin
                         ) -> Candidate:
        candidate = Candidate(
            service=service.name, image=service.image, digest=published.digest,
            tag=published.tag, version=version_from_tag(published.tag),
            source_repo=service.source, trigger="package", source_sha=origin.revision,
            package_url=published.package_url, published_at=published.published_at)
        if not service.is_chart:
            return candidate
        # the event says "container" for any OCI artifact: a chart's manifest says what it is
        try:
            version = await self.promoter.ctx.images.find_by_digest(service.image,
                                                                    published.digest)
        except RegistryError as exc:  # the event alone promotes, as for images
            log.warning("chart manifest unavailable, promoted on the event alone: %s",
                        exc.message, extra={"service": service.name})
            return candidate
        if version is None:
            return candidate
        return replace(candidate, kind_refusal=kind_problem(
            f"{service.image}:{published.tag}", version, chart=True))

    async def _completed_by_release(self, gh: GitHubAPI, repo: DeploymentRepo,
                                    service: Service, published: PublishedImage
                                    ) -> Candidate | None:
        if not any(env.entry_from in ("release", "any")
                   for env in repo.policy.environments.values()):
            return None
        release = await find_release(gh, service.source, service.name, published.tag)
        if release is None:
            return None
        try:
            return await release_candidate(self.promoter.ctx, gh, repo, service.name, release,
                                           service.source)
        except RegistryError as exc:
            log.warning("release image lookup failed: %s", exc.message,
                        extra={"service": service.name, "tag": published.tag})
            return None
