"""What a merged promotion sets in motion in the same deployment repository."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from .candidates import Candidate, Trigger
from .marker import PromotionMarker
from .opener import Opener, OpenResult, open_pulls
from .policies import DeploymentRepo, IndexedRepo
from .provenance import LazyProvenance

if TYPE_CHECKING:
    from ..context import Context
    from .gatekeeper import GateService

log = logging.getLogger(__name__)

MAX_REEVALUATED = 50


def candidate_from_marker(marker: PromotionMarker, image: str, trigger: Trigger,
                          requester: str | None) -> Candidate:
    return Candidate(
        service=marker.service, image=image, digest=marker.digest, tag=marker.tag,
        version=marker.version, source_repo=marker.source_repo, trigger=trigger,
        source_sha=marker.source_sha, release_tag=marker.release_tag, requester=requester,
    )


async def promote_downstream(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                             marker: PromotionMarker, upstream_pr: int, *,
                             environments: list[str] | None = None,
                             requester: str | None = None) -> list[tuple[str, OpenResult]]:
    """Open the same digest's PR in downstream environments: those with `promote: auto`, or
    the ones named (a `/promote <env>` command)."""
    policy = repo.policy
    if marker.service not in policy.services:
        return []
    if environments is None:
        targets = [env.name for env in policy.downstream_of(marker.environment)
                   if env.promote == "auto"]
    else:
        targets = environments
    if not targets:
        return []
    candidate = candidate_from_marker(
        marker, policy.services[marker.service].image,
        "upstream" if environments is None else "command",
        requester if requester is not None else marker.requester,
    )
    provenance = LazyProvenance(gh, candidate, ctx.web_url)
    opener = Opener(ctx, gh, repo)
    results = []
    for env in targets:
        result = await opener.open(candidate, env, provenance=provenance,
                                   explicit=environments is not None, upstream_pr=upstream_pr)
        log.info("downstream promotion %s", result.action,
                 extra={"env": env, "pull": result.number, "detail": result.message})
        results.append((env, result))
    return results


async def reevaluate_open_pulls(gates: GateService, gh: GitHubAPI, repo: IndexedRepo) -> None:
    """Re-run the gate of every open PR: upstream evidence may have changed for any of them."""
    pulls = await open_pulls(gh, repo.full_name)
    for pr in pulls[:MAX_REEVALUATED]:
        await gates.evaluate(gh, repo, int(pr["number"]), pr)
