"""Container images with real content: configuration, layer, per-platform manifests, index.

Every digest is the sha256 of the bytes served for it, as in a registry, so a client that
checks `Docker-Content-Digest` against the body is satisfied only by real content. Images are
content-addressed: building the same image twice gives the same digest, and `image_for` finds
an image built earlier in this process by its digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DEFAULT_PLATFORMS = ("linux/amd64", "linux/arm64")


@dataclass(frozen=True)
class Blob:
    media_type: str
    data: bytes

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class Image:
    digest: str  # the index's (or, for one platform without an index, the manifest's)
    media_type: str
    platform_digests: tuple[str, ...]
    blobs: Mapping[str, Blob] = field(repr=False)  # every manifest and blob by digest


_BUILT: dict[str, Image] = {}


def _canonical(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def build_image(text: str, *, labels: Mapping[str, str] | None = None,
                platforms: Sequence[str] = DEFAULT_PLATFORMS) -> Image:
    """A multi-arch image (an OCI index of one manifest per platform) standing for `text`;
    with a single platform and `platforms=("linux/amd64",)` still an index (buildx's default)."""
    blobs: dict[str, Blob] = {}
    descriptors: list[dict[str, object]] = []
    platform_digests: list[str] = []
    for platform in platforms:
        os_name, _, arch = platform.partition("/")
        layer = Blob(OCI_LAYER, f"{text} {platform}".encode())
        config = Blob(OCI_CONFIG, _canonical({
            "architecture": arch, "os": os_name,
            "config": {"Labels": dict(labels or {})},
            "rootfs": {"type": "layers", "diff_ids": [layer.digest]},
        }))
        manifest = Blob(OCI_MANIFEST, _canonical({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": config.digest,
                       "size": len(config.data)},
            "layers": [{"mediaType": OCI_LAYER, "digest": layer.digest,
                        "size": len(layer.data)}],
        }))
        for blob in (layer, config, manifest):
            blobs[blob.digest] = blob
        platform_digests.append(manifest.digest)
        descriptors.append({"mediaType": OCI_MANIFEST, "digest": manifest.digest,
                            "size": len(manifest.data),
                            "platform": {"architecture": arch, "os": os_name}})
    index = Blob(OCI_INDEX, _canonical({"schemaVersion": 2, "mediaType": OCI_INDEX,
                                        "manifests": descriptors}))
    blobs[index.digest] = index
    image = Image(index.digest, OCI_INDEX, tuple(platform_digests), blobs)
    _BUILT[image.digest] = image
    return image


HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"


def build_chart(name: str, version: str, *, source: str | None = None,
                text: str = "") -> Image:
    """A Helm chart as `helm push` stores it (Helm's OCI support documentation): one OCI
    image manifest, its config the chart's metadata with Helm's config media type, one layer
    the chart archive, and the chart's `org.opencontainers.image.*` annotations. No index:
    a chart has no platforms."""
    config = Blob(HELM_CONFIG, _canonical({"apiVersion": "v2", "name": name,
                                           "version": version, "type": "application"}))
    layer = Blob(HELM_CHART, f"{name}-{version}.tgz {text}".encode())
    annotations = {"org.opencontainers.image.title": name,
                   "org.opencontainers.image.version": version}
    if source is not None:
        annotations["org.opencontainers.image.source"] = source
    manifest = Blob(OCI_MANIFEST, _canonical({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": HELM_CONFIG, "digest": config.digest, "size": len(config.data)},
        "layers": [{"mediaType": HELM_CHART, "digest": layer.digest, "size": len(layer.data)}],
        "annotations": annotations,
    }))
    chart = Image(manifest.digest, OCI_MANIFEST, (),
                  {blob.digest: blob for blob in (config, layer, manifest)})
    _BUILT[chart.digest] = chart
    return chart


def image_for(digest: str) -> Image | None:
    """An image built earlier in this process, by its index digest."""
    return _BUILT.get(digest)
