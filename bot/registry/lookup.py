"""What the bot asks of registries (a tag's digest, a digest's tag, an image's labels) and what
GitHub's package events told it about images (their package version pages)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import cachetools

from bot.domain.promotions.candidate import repo_from_source
from bot.domain.tags import version_from_tag
from bot.registry.client import RegistryClient
from bot.registry.manifests import HELM_CONFIG, Manifest, image_platform
from bot.registry.names import Repository, repository_of

log = logging.getLogger(__name__)

# A digest's tag is found by resolving tags one by one: bound how many (newest first).
MAX_TAGS_SCANNED = 50


@dataclass(frozen=True)
class ImageVersion:
    """A published image: its (index) digest and the tag it was found under."""

    digest: str
    tag: str | None
    manifest: Manifest


@dataclass(frozen=True)
class Provenance:
    """Where an image came from, as its OCI labels say (a chart: its manifest's
    annotations)."""

    source_repo: str | None
    revision: str | None


class ImageLookup:
    def __init__(self, client: RegistryClient) -> None:
        self.client = client
        # The package version page of each digest, as a `registry_package` event named it
        # (GitHub refuses the Packages REST API to installation tokens: pages are never fetched).
        self._package_pages: cachetools.LRUCache[tuple[str, str], str] = cachetools.LRUCache(
            maxsize=20_000)

    def remember_package_page(self, image: str, digest: str, url: str) -> None:
        self._package_pages[(image.lower(), digest)] = url

    def package_page(self, image: str, digest: str) -> str | None:
        return self._package_pages.get((image.lower(), digest))

    async def find_by_tags(self, image: str, tags: list[str], *,
                           revalidate: bool = False) -> ImageVersion | None:
        """The image published under the first of `tags` that exists (``revalidate``: never
        from a cached answer about a tag, see `RegistryClient.manifest`)."""
        repository = repository_of(image)
        for tag in dict.fromkeys(tags):
            manifest = await self.client.manifest(repository, tag, revalidate=revalidate)
            if manifest is not None:
                return ImageVersion(manifest.digest, tag, manifest)
        return None

    async def find_by_digest(self, image: str, digest: str) -> ImageVersion | None:
        manifest = await self.client.manifest(repository_of(image), digest)
        return ImageVersion(digest, None, manifest) if manifest is not None else None

    async def tags(self, image: str) -> list[str]:
        return await self.client.tags(repository_of(image))

    async def tag_of(self, image: str, digest: str) -> str | None:
        """A tag naming `digest` (versions newest first), or None."""
        found = await self._scan(image, lambda m: m.digest == digest)
        return found.tag if found else None

    async def tags_of(self, image: str, digest: str) -> list[str]:
        """Every tag naming `digest` among the newest tags scanned, newest first."""
        repository = repository_of(image)
        tags = sorted(await self.client.tags(repository), key=_newest_first)
        found = []
        for tag in tags[:MAX_TAGS_SCANNED]:
            manifest = await self.client.manifest(repository, tag)
            if manifest is not None and manifest.digest == digest:
                found.append(tag)
        return found

    async def index_of(self, image: str, platform_digest: str) -> ImageVersion | None:
        """The tagged multi-arch index listing a per-platform manifest, or None."""
        return await self._scan(image, lambda m: any(p.digest == platform_digest
                                                     for p in m.platforms))

    async def provenance(self, image: str, digest: str) -> Provenance:
        """The `org.opencontainers.image.source`/`.revision` labels of an image's configuration
        (for an index: of its linux/amd64 image, or the first real platform)."""
        repository = repository_of(image)
        manifest = await self.client.manifest(repository, digest)
        if manifest is not None and manifest.is_index:
            platform = image_platform(manifest)
            manifest = (await self.client.manifest(repository, platform.digest)
                        if platform else None)
        if manifest is not None and manifest.is_chart:
            # `helm push` writes no image configuration: a chart's own annotations name it
            return Provenance(
                repo_from_source(manifest.annotation("org.opencontainers.image.source")),
                manifest.annotation("org.opencontainers.image.revision") or None)
        if manifest is None or manifest.config_digest is None:
            return Provenance(None, None)
        labels = await self.client.labels(repository, manifest.config_digest)
        return Provenance(repo_from_source(labels.get("org.opencontainers.image.source")),
                          labels.get("org.opencontainers.image.revision") or None)

    async def _scan(self, image: str, wanted: Callable[[Manifest], bool]) -> ImageVersion | None:
        repository: Repository = repository_of(image)
        tags = sorted(await self.client.tags(repository), key=_newest_first)
        for tag in tags[:MAX_TAGS_SCANNED]:
            manifest = await self.client.manifest(repository, tag)
            if manifest is not None and wanted(manifest):
                return ImageVersion(manifest.digest, tag, manifest)
        return None


def kind_problem(reference: str, found: ImageVersion, *, chart: bool) -> str | None:
    """Why a chart service cannot take what the registry holds as an image, or the reverse."""
    if found.manifest.is_chart == chart:
        return None
    if chart:
        return (f"{reference} is a container image, not a Helm chart (its manifest's config "
                f"is not {HELM_CONFIG}); a chart service promotes charts only")
    return (f"{reference} is a Helm chart, not a container image; name it as `chart:` in "
            "the policy to promote it")


def _newest_first(tag: str) -> tuple[int, tuple[int, ...], str]:
    """Sort key: semantic versions newest first, then other tags (`latest` last)."""
    version = version_from_tag(tag)
    numbers = version.split("-", 1)[0].split("+", 1)[0].split(".")
    if all(n.isdigit() for n in numbers) and numbers:
        return 0, tuple(-int(n) for n in numbers), tag
    return (2 if tag == "latest" else 1), (), tag


