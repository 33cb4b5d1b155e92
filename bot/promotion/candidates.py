"""Candidates: an image digest with what is known about where it came from."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from ..domain.images import canonical_image_name, is_digest, parse_image_ref
from ..domain.tags import version_from_tag

log = logging.getLogger(__name__)

GHCR = "ghcr.io"
# Newest versions first; a release names a recent image, so one page is enough.
_VERSIONS_PAGE = 100

# What asked for the promotion: a release, a package version, a command, an upstream
# environment's merge or a rollback.
Trigger = Literal["release", "package", "command", "upstream", "rollback"]


@dataclass(frozen=True)
class Candidate:
    service: str
    image: str  # the service's image name from the policy
    digest: str
    tag: str | None  # the image tag to write beside the digest
    version: str  # human version: the tag without "v" or a monorepo prefix
    source_repo: str
    trigger: Trigger
    source_sha: str | None = None
    release_tag: str | None = None
    release_url: str | None = None
    package_url: str | None = None
    published_at: str | None = None
    requester: str | None = None
    prerelease: bool = False


@dataclass(frozen=True)
class PackageVersion:
    id: int
    digest: str
    tags: tuple[str, ...]
    url: str | None
    created_at: str | None


def ghcr_package(image: str) -> tuple[str, str] | None:
    """(owner, package name) of a GHCR image, or None for other registries."""
    name = canonical_image_name(parse_image_ref(image).name)
    host, _, rest = name.partition("/")
    if host != GHCR or "/" not in rest:
        return None
    owner, _, package = rest.partition("/")
    return owner, package


class PackageLookup:
    """Reads container package versions; remembers whether an owner is an org or a user."""

    def __init__(self) -> None:
        self._owner_kind: dict[str, str] = {}

    async def versions(self, gh: GitHubAPI, image: str) -> list[PackageVersion]:
        located = ghcr_package(image)
        if located is None:
            return []
        owner, package = located
        kinds = [self._owner_kind[owner]] if owner in self._owner_kind else ["orgs", "users"]
        for kind in kinds:
            url = (f"/{kind}/{owner}/packages/container/{quote(package, safe='')}/versions"
                   f"?per_page={_VERSIONS_PAGE}")
            try:
                data = await gh.getitem(url)
            except gidgethub.BadRequest as exc:
                if exc.status_code == 404:
                    continue
                raise
            self._owner_kind[owner] = kind
            return [version for item in data if (version := _package_version(item))]
        return []

    async def find_by_tags(
        self, gh: GitHubAPI, image: str, tags: list[str]
    ) -> tuple[PackageVersion, str] | None:
        """The version carrying the first of `tags` found, and that tag."""
        versions = await self.versions(gh, image)
        for tag in tags:
            for version in versions:
                if tag in version.tags:
                    return version, tag
        return None

    async def find_by_digest(self, gh: GitHubAPI, image: str, digest: str
                             ) -> PackageVersion | None:
        for version in await self.versions(gh, image):
            if version.digest == digest:
                return version
        return None


def _package_version(item: Any) -> PackageVersion | None:
    if not isinstance(item, dict) or not is_digest(str(item.get("name", ""))):
        return None
    metadata = item.get("metadata") or {}
    tags = (metadata.get("container") or {}).get("tags") or []
    return PackageVersion(
        id=int(item.get("id", 0)),
        digest=str(item["name"]),
        tags=tuple(str(t) for t in tags),
        url=item.get("html_url"),
        created_at=item.get("created_at"),
    )


def release_tag_variants(git_tag: str) -> list[str]:
    """Image tags that a release's git tag may have been published under, best first."""
    version = version_from_tag(git_tag)
    variants = [version, f"v{version}", git_tag]
    return list(dict.fromkeys(variants))


def package_event_facts(payload: dict[str, Any]) -> dict[str, Any] | None:
    """Image name, digest, tag and labels of a container `package`/`registry_package` event.

    None for other package types and for untagged manifests (the per-platform parts of a
    multi-arch push: only the tagged manifest list is promoted).
    """
    package = payload.get("package") or payload.get("registry_package") or {}
    if str(package.get("package_type", "")).lower() != "container":
        return None
    version = package.get("package_version") or {}
    metadata = version.get("container_metadata") or {}
    tag = metadata.get("tag") or {}
    tag_name = str(tag.get("name") or "")
    digest = str(tag.get("digest") or version.get("version") or version.get("name") or "")
    if not tag_name or not is_digest(digest):
        return None
    owner = (package.get("owner") or {}).get("login") or package.get("namespace") or ""
    name = str(package.get("name") or "")
    if not owner or not name:
        return None
    labels = metadata.get("labels") or {}
    labels = labels if isinstance(labels, dict) else {}
    return {
        "image": f"{GHCR}/{owner}/{name}".lower(),
        "digest": digest,
        "tag": tag_name,
        "labels": labels,
        "package_url": version.get("html_url") or package.get("html_url"),
        "published_at": version.get("created_at") or version.get("updated_at"),
    }


def source_from_labels(labels: dict[str, Any]) -> tuple[str | None, str | None]:
    """(owner/repo, revision) from the OCI labels of a package event.

    GitHub puts the image's labels under `container_metadata.labels.all_labels` and repeats
    `source`/`revision` flat beside it; both spellings are read.
    """
    every = labels.get("all_labels")
    merged = {**labels, **(every if isinstance(every, dict) else {})}
    source = str(merged.get("org.opencontainers.image.source") or merged.get("source") or "")
    repo = None
    if source:
        path = source.split("://", 1)[-1].split("/", 1)[-1].removesuffix(".git").strip("/")
        if path.count("/") == 1:
            repo = path
    revision = merged.get("org.opencontainers.image.revision") or merged.get("revision")
    return repo, (str(revision) if revision else None)
