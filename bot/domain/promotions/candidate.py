"""Candidates: an image digest with what is known about where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from bot.domain.images import is_digest
from bot.domain.tags import version_from_tag

GHCR = "ghcr.io"
# GitHub's "unknown" timestamp in package events (untagged per-platform versions)
UNKNOWN_TIME = "0001-01-01T00:00:00Z"

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
    # why this service cannot take what the registry holds (a chart for an image service, or
    # the reverse): the promotion is refused with it
    kind_refusal: str | None = None


def release_tag_variants(git_tag: str) -> list[str]:
    """Image tags that a release's git tag may have been published under, best first."""
    version = version_from_tag(git_tag)
    variants = [version, f"v{version}", git_tag]
    return list(dict.fromkeys(variants))


def package_event_facts(payload: dict[str, Any]) -> dict[str, Any] | None:
    """Image name, digest, tag and labels of a container `package`/`registry_package` event.

    None for other package types and for untagged manifests (the per-platform parts of a
    multi-arch push, which GHCR announces before the index: only the tagged index is promoted).
    One event names one tag; `target_oid` is the source commit when GitHub knows it.
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
    published = [str(v) for v in (version.get("created_at"), version.get("updated_at"))
                 if v and str(v) != UNKNOWN_TIME]
    target = str(version.get("target_oid") or "")
    return {
        "image": f"{GHCR}/{owner}/{name}".lower(),
        "digest": digest,
        "tag": tag_name,
        "labels": labels,
        "target_oid": target if _is_commit(target) else None,
        "package_url": version.get("html_url") or package.get("html_url"),
        "published_at": published[0] if published else None,
    }


def _is_commit(value: str) -> bool:
    return len(value) == 40 and all(c in "0123456789abcdef" for c in value.lower())


def repo_from_source(source: str | None) -> str | None:
    """`owner/repo` of an `org.opencontainers.image.source` URL on a GitHub host."""
    if not source:
        return None
    path = source.split("://", 1)[-1].split("/", 1)[-1].removesuffix(".git").strip("/")
    return path if path.count("/") == 1 else None


def source_from_labels(labels: dict[str, Any]) -> tuple[str | None, str | None]:
    """(owner/repo, revision) from the OCI labels of a package event.

    GitHub puts the image's labels under `container_metadata.labels.all_labels` and repeats
    `source`/`revision` flat beside it; both spellings are read.
    """
    every = labels.get("all_labels")
    merged = {**labels, **(every if isinstance(every, dict) else {})}
    source = str(merged.get("org.opencontainers.image.source") or merged.get("source") or "")
    full_name = repo_from_source(source)
    revision = merged.get("org.opencontainers.image.revision") or merged.get("revision")
    return full_name, (str(revision) if revision else None)
