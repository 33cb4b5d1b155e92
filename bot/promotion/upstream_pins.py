"""What the upstream environments of an environment run now: per service, the (tag, digest)
each upstream file pins on the default branch — the `merged` evidence a downstream gate looks
for — and, across a fan-in, whether every upstream runs the same digest."""

from __future__ import annotations

from collections.abc import Sequence

from gidgethub.abc import GitHubAPI

from ..github.repos import get_file
from ..manifests import ManifestError, find_images
from ..text import short_digest
from .policies import DeploymentRepo

Pin = tuple[str | None, str]  # (tag, digest)


async def upstream_pins(gh: GitHubAPI, repo: DeploymentRepo, services: Sequence[str],
                        upstream: str) -> dict[str, Pin | str]:
    """Per service, the (tag, digest) its file in ``upstream`` pins on the default branch,
    or why there is none."""
    policy = repo.policy
    texts: dict[str, str | None] = {}
    pins: dict[str, Pin | str] = {}
    for service in services:
        path = policy.path_for(service, upstream)
        if path not in texts:
            found = await get_file(gh, repo.full_name, path)
            texts[path] = found.text if found is not None else None
        text = texts[path]
        if text is None:
            pins[service] = f"`{path}` does not exist"
            continue
        try:
            occurrences = find_images(text, policy.services[service].image, path=path,
                                      tag_key=policy.services[service].tag_key)
        except ManifestError as exc:
            pins[service] = f"`{path}`: {exc}"
            continue
        pinned = next((o for o in occurrences if o.digest), None)
        if pinned is None or pinned.digest is None:
            pins[service] = f"not pinned by digest in `{path}`"
        else:
            pins[service] = (pinned.tag, pinned.digest)
    return pins


async def agreed_pins(gh: GitHubAPI, repo: DeploymentRepo, services: Sequence[str],
                      environment: str) -> dict[str, Pin | str]:
    """Per service, the digest every upstream of ``environment`` pins, or why there is none:
    an upstream that pins nothing, or upstreams that disagree (each named with what it
    runs)."""
    upstreams = repo.policy.environments[environment].after
    by_upstream = {upstream: await upstream_pins(gh, repo, services, upstream)
                   for upstream in upstreams}
    agreed: dict[str, Pin | str] = {}
    for service in services:
        seen = {upstream: pins[service] for upstream, pins in by_upstream.items()}
        missing = [pin if len(upstreams) == 1 else f"{upstream}: {pin}"
                   for upstream, pin in seen.items() if isinstance(pin, str)]
        digests = {pin[1] for pin in seen.values() if not isinstance(pin, str)}
        if missing:
            agreed[service] = "; ".join(missing)
        elif len(digests) > 1:
            agreed[service] = "the upstreams disagree: " + ", ".join(
                f"{upstream} runs {describe_pin(pin)}" for upstream, pin in seen.items()
                if not isinstance(pin, str))
        else:
            agreed[service] = next(pin for pin in seen.values() if not isinstance(pin, str))
    return agreed


def describe_pin(pin: Pin) -> str:
    tag, digest = pin
    return f"{tag} ({short_digest(digest)})" if tag else short_digest(digest)
