"""Container image references: parsing, registry-style comparison and allow-lists.

A reference is ``[registry[:port]/]path[:tag][@sha256:<hex>]``. Names are compared the way
registries resolve them: Docker Hub short names expand (``nginx`` is
``docker.io/library/nginx``), the Docker Hub aliases ``index.docker.io`` and
``registry-1.docker.io`` collapse to ``docker.io``, and the whole name is compared
case-insensitively (GHCR treats owners that way). The spelling found in a file is never
rewritten; only the canonical form is used to compare.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_REFERENCE_LENGTH = 512

_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
# One path component; upper case is accepted because GHCR owners are case-insensitive and
# files do spell them that way.
_COMPONENT_RE = re.compile(r"[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*")
_HOST_RE = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"(?::[0-9]{1,5})?"
)
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


@dataclass(frozen=True)
class ImageRef:
    """A parsed reference; ``name`` keeps the spelling it was written with."""

    name: str
    tag: str | None
    digest: str | None

    @property
    def canonical_name(self) -> str:
        return canonical_image_name(self.name)

    def __str__(self) -> str:
        text = self.name
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


def is_digest(value: str) -> bool:
    """True for ``sha256:`` followed by exactly 64 lower-case hex digits."""
    return _DIGEST_RE.fullmatch(value) is not None


def is_tag(value: str) -> bool:
    return _TAG_RE.fullmatch(value) is not None


def _looks_like_host(component: str) -> bool:
    return "." in component or ":" in component or component.lower() == "localhost"


def _split_name(name: str) -> tuple[str | None, list[str]]:
    """Split a name into (registry host or None, path components); ValueError if invalid."""
    parts = name.split("/")
    host: str | None = None
    if len(parts) > 1 and _looks_like_host(parts[0]):
        host = parts[0]
        if _HOST_RE.fullmatch(host) is None:
            raise ValueError(f"invalid registry host {host!r}")
        parts = parts[1:]
    for part in parts:
        if _COMPONENT_RE.fullmatch(part) is None:
            raise ValueError(f"invalid image name component {part!r} in {name!r}")
    return host, parts


def parse_image_ref(text: str) -> ImageRef:
    """Parse ``name[:tag][@digest]``; ValueError on anything that is not a reference."""
    if len(text) > MAX_REFERENCE_LENGTH:
        raise ValueError(f"image reference longer than {MAX_REFERENCE_LENGTH} characters")
    if not text or text != text.strip():
        raise ValueError(f"invalid image reference {text!r}")
    rest = text
    digest: str | None = None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not is_digest(digest):
            raise ValueError(f"invalid digest {digest!r} (expected sha256:<64 hex>)")
    tag: str | None = None
    last_slash = rest.rfind("/")
    colon = rest.rfind(":")
    # A colon before the last slash belongs to a registry port, not to a tag.
    if colon > last_slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not is_tag(tag):
            raise ValueError(f"invalid tag {tag!r}")
    _split_name(rest)
    return ImageRef(name=rest, tag=tag, digest=digest)


def _name_only(name: str) -> str:
    return parse_image_ref(name).name


def canonical_image_name(name: str) -> str:
    """The normalised name used for comparisons; a tag or digest in ``name`` is dropped."""
    host, parts = _split_name(_name_only(name))
    host = "docker.io" if host is None else host.lower()
    if host in _DOCKER_HUB_ALIASES:
        host = "docker.io"
        if len(parts) == 1:
            parts = ["library", *parts]
    return "/".join([host, *parts]).lower()


def same_image(a: str, b: str) -> bool:
    """True when both references name the same repository (tags and digests ignored)."""
    try:
        return canonical_image_name(a) == canonical_image_name(b)
    except ValueError:
        return False


def _canonical_prefix(prefix: str) -> tuple[str, bool]:
    """(canonical prefix without trailing slash, whether only names *below* it match)."""
    below_only = prefix.endswith("/")
    bare = prefix.rstrip("/")
    if not bare:
        raise ValueError("empty image prefix")
    if "/" not in bare and _looks_like_host(bare):
        registry = bare.lower()
        return ("docker.io" if registry in _DOCKER_HUB_ALIASES else registry), True
    host, parts = _split_name(bare)
    if host is None or host.lower() in _DOCKER_HUB_ALIASES:
        # "library/" alone, or "acme" (a Docker Hub namespace), stay as written under docker.io;
        # only a single component without a trailing slash is an official image.
        if len(parts) == 1 and not below_only:
            return f"docker.io/library/{parts[0]}".lower(), False
        return "/".join(["docker.io", *parts]).lower(), below_only
    return "/".join([host, *parts]).lower(), below_only


def image_allowed(name: str, allowed_prefixes: Sequence[str]) -> bool:
    """Whether ``name`` lies under one of the prefixes (compared canonically).

    ``ghcr.io/acme/`` admits ``ghcr.io/acme/web`` but not ``ghcr.io/acme-evil/web``;
    a prefix without a trailing slash admits that exact image or images below it.
    """
    try:
        canonical = canonical_image_name(name)
    except ValueError:
        return False
    for prefix in allowed_prefixes:
        try:
            base, below_only = _canonical_prefix(prefix)
        except ValueError:
            continue
        if canonical.startswith(base + "/") or (not below_only and canonical == base):
            return True
    return False
