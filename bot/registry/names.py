"""Where an image lives: its registry host, repository name and HTTP endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from bot.domain.images import canonical_image_name

DOCKER_HUB = "docker.io"
# Docker Hub's names are `docker.io/...`, its Distribution API is served elsewhere.
DOCKER_HUB_ENDPOINT = "https://registry-1.docker.io"
_DOCKER_HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class Repository:
    host: str  # canonical registry host: "ghcr.io", "docker.io", "registry.local:5000"
    name: str  # repository path below it: "acme/web", "library/nginx"

    def __str__(self) -> str:
        return f"{self.host}/{self.name}"


def repository_of(image: str) -> Repository:
    """The registry repository of an image name (`nginx` is docker.io's `library/nginx`)."""
    host, _, name = canonical_image_name(image).partition("/")
    return Repository(host, name)


def host_key(text: str) -> str:
    """A registry host as written in a Docker config (`https://index.docker.io/v1/`) or a
    setting, reduced to the canonical host."""
    value = text.strip()
    if "://" in value:
        value = urlsplit(value).netloc
    value = value.split("/", 1)[0].lower()
    return DOCKER_HUB if value in _DOCKER_HUB_ALIASES else value


def parse_endpoints(text: str) -> dict[str, str]:
    """`host=url,host=url` → {canonical host: base URL}; ValueError names the bad entry."""
    endpoints: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        host, sep, url = entry.partition("=")
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise ValueError(f"expected host=http(s)://address, got {entry!r}") from None
        if not sep or not host.strip() or parts.scheme not in ("http", "https") \
                or not parts.hostname or port == 0 or parts.query or parts.fragment:
            raise ValueError(f"expected host=http(s)://address, got {entry!r}")
        endpoints[host_key(host)] = url.strip().rstrip("/")
    return endpoints


def endpoint_for(host: str, overrides: Mapping[str, str]) -> str:
    """The base URL that serves `/v2/` for a registry host."""
    if host in overrides:
        return overrides[host]
    if host == DOCKER_HUB:
        return DOCKER_HUB_ENDPOINT
    return f"https://{host}"
