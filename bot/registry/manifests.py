"""Image manifests and indexes as the OCI Distribution API returns them (pure parsing)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
# Every type is asked for, so a registry never down-converts a multi-arch image to one platform.
ACCEPT = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
# the configuration media type of a Helm chart pushed to an OCI registry (`helm push`)
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"

_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?')


class ManifestError(ValueError):
    """A manifest that is not what the registry claims (bad JSON, wrong digest, unknown type)."""


@dataclass(frozen=True)
class Platform:
    digest: str
    os: str
    architecture: str
    variant: str = ""

    @property
    def label(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


@dataclass(frozen=True)
class Manifest:
    digest: str
    media_type: str
    size: int
    platforms: tuple[Platform, ...] = ()  # an index's image manifests
    config_digest: str | None = None  # an image manifest's configuration blob
    config_media_type: str | None = None
    # the manifest's own OCI annotations (a chart's provenance is written there)
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES

    @property
    def is_chart(self) -> bool:
        return self.config_media_type == HELM_CONFIG

    def annotation(self, key: str) -> str | None:
        return next((value for name, value in self.annotations if name == key), None)


def sha256_digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def parse_manifest(body: bytes, content_type: str, header_digest: str | None,
                   expected: str | None = None) -> Manifest:
    """Check the body against its digest and read what Conveyor needs from it.

    `header_digest` is `Docker-Content-Digest`; `expected` the digest it was asked for. The
    body's own sha256 is the truth: a registry whose header disagrees is not believed.
    """
    if len(body) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"manifest larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MB")
    digest = sha256_digest(body)
    for claimed in (header_digest, expected):
        if claimed and claimed.startswith("sha256:") and claimed != digest:
            raise ManifestError(f"manifest digest {digest} does not match {claimed}")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ManifestError("manifest is not JSON") from None
    if not isinstance(data, dict):
        raise ManifestError("manifest is not a JSON object")
    media_type = str(data.get("mediaType") or content_type.split(";", 1)[0].strip())
    if media_type not in INDEX_TYPES and media_type not in MANIFEST_TYPES:
        # OCI makes mediaType optional: recognise the shape
        media_type = OCI_INDEX if "manifests" in data else (
            OCI_MANIFEST if "config" in data else media_type)
    if media_type in INDEX_TYPES:
        return Manifest(digest, media_type, len(body), platforms=_platforms(data))
    if media_type in MANIFEST_TYPES:
        config = data.get("config")
        config_digest = config.get("digest") if isinstance(config, dict) else None
        config_type = config.get("mediaType") if isinstance(config, dict) else None
        annotations = data.get("annotations")
        return Manifest(digest, media_type, len(body),
                        config_digest=str(config_digest) if config_digest else None,
                        config_media_type=str(config_type) if config_type else None,
                        annotations=tuple(
                            (str(k), str(v)) for k, v in annotations.items()
                            if isinstance(v, str))[:100] if isinstance(annotations, dict)
                        else ())
    raise ManifestError(f"unsupported manifest type {media_type or 'unknown'}")


def _platforms(data: dict[str, Any]) -> tuple[Platform, ...]:
    found = []
    for entry in data.get("manifests") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("digest"), str):
            continue
        found_platform = entry.get("platform")
        platform = found_platform if isinstance(found_platform, dict) else {}
        found.append(Platform(entry["digest"], str(platform.get("os", "")),
                              str(platform.get("architecture", "")),
                              str(platform.get("variant", ""))))
    return tuple(found)


def image_platform(manifest: Manifest) -> Platform | None:
    """The platform whose configuration stands for the index (linux/amd64 first); buildx
    attestation manifests (`unknown/unknown`) never do."""
    real = [p for p in manifest.platforms if p.os not in ("", "unknown")]
    for platform in real:
        if (platform.os, platform.architecture) == ("linux", "amd64"):
            return platform
    return real[0] if real else None


def config_labels(body: bytes) -> dict[str, str]:
    """The OCI labels (`config.Labels`) of an image configuration blob."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    config = data.get("config") if isinstance(data, dict) else None
    labels = config.get("Labels") if isinstance(config, dict) else None
    if not isinstance(labels, dict):
        return {}
    return {str(k): str(v) for k, v in labels.items() if isinstance(v, str | int | float)}


def next_link(header: str | None) -> str | None:
    """The `rel="next"` target of a `Link` header (tags/list pagination)."""
    if not header:
        return None
    match = _LINK.search(header)
    return match.group(1) if match else None
