"""What the upstream environments of an environment run now: per service, the (tag, digest)
each upstream file pins on the default branch — the `merged` evidence a downstream gate looks
for — and, across a fan-in, whether every upstream runs the same digest."""

from __future__ import annotations

from collections.abc import Sequence

from gidgethub.abc import GitHubAPI

from bot.github.repos import get_file
from bot.manifests import ManifestError, find_images
from bot.manifests.charts import VERSION_ONLY_SHAPES
from bot.promotion.policies import DeploymentRepo
from bot.registry.lookup import ImageLookup
from bot.text import short_digest

Pin = tuple[str | None, str]  # (tag, digest)


async def upstream_pins(gh: GitHubAPI, repo: DeploymentRepo, services: Sequence[str],
                        upstream: str, images: ImageLookup | None = None
                        ) -> dict[str, Pin | str]:
    """Per service, the (tag, digest) its file in ``upstream`` pins on the default branch,
    or why there is none. A chart named by its version alone (no digest in the file) is
    resolved in the registry with ``images``; the gate then checks that upstream ran that
    digest."""
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
        version = next((o.tag for o in occurrences
                        if o.tag and o.shape in VERSION_ONLY_SHAPES), None)
        if pinned is not None and pinned.digest is not None:
            pins[service] = (pinned.tag, pinned.digest)
        elif version is not None and images is not None:
            chart = await images.find_by_tags(policy.services[service].image, [version],
                                              revalidate=True)
            pins[service] = ((version, chart.digest) if chart is not None
                             else f"version {version} of `{path}` is not in the registry")
        else:
            pins[service] = f"not pinned by digest in `{path}`"
    return pins


async def agreed_pins(gh: GitHubAPI, repo: DeploymentRepo, services: Sequence[str],
                      environment: str, images: ImageLookup | None = None
                      ) -> dict[str, Pin | str]:
    """Per service, the digest every upstream of ``environment`` pins, or why there is none:
    an upstream that pins nothing, or upstreams that disagree (each named with what it
    runs)."""
    upstreams = repo.policy.environments[environment].after
    by_upstream = {upstream: await upstream_pins(gh, repo, services, upstream, images)
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
