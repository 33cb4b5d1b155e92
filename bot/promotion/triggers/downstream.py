"""What a merged promotion sets in motion in the same deployment repository."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.domain.promotions.candidate import Candidate, Trigger
from bot.domain.promotions.marker import PromotionMarker
from bot.promotion.evidence.halts import halted
from bot.promotion.opening.opener import Opener, OpenResult, open_pulls
from bot.promotion.opening.provenance import LazyProvenance
from bot.promotion.opening.upstream_pins import upstream_pins
from bot.promotion.policies import DeploymentRepo, IndexedRepo
from bot.promotion.triggers.flows import Promoter

if TYPE_CHECKING:
    from bot.promotion.gate.gatekeeper import GateService
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

# The open PRs whose gates a push or a merge re-runs at once, newest first; the resync re-runs
# every open PR's gate. Each evaluation after the default branch moved costs a counted compare,
# so re-running them all on every push would spend an installation's 5,000 requests an hour
# in a repository with hundreds of open PRs.
RERUN_AT_ONCE = 50


def candidate_from_marker(marker: PromotionMarker, image: str, trigger: Trigger,
                          requester: str | None) -> Candidate:
    return Candidate(
        service=marker.service, image=image, digest=marker.digest, tag=marker.tag,
        version=marker.version, source_repo=marker.source_repo, trigger=trigger,
        source_sha=marker.source_sha, release_tag=marker.release_tag, requester=requester,
    )


async def promote_downstream(promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo,
                             marker: PromotionMarker, upstream_pr: int, *,
                             environments: list[str] | None = None,
                             requester: str | None = None) -> list[tuple[str, OpenResult]]:
    """Open the same digest's PR in downstream environments: those with `promote: auto`, or
    the ones named (a `/promote <env>` command)."""
    ctx = promoter.ctx
    policy = repo.policy
    if marker.service not in policy.services:
        return []
    if environments is None:
        targets = [env.name for env in policy.downstream_of(marker.environment)
                   if env.promote == "auto"
                   and await auto_may_open(ctx, gh, repo, marker, env.name)]
    else:
        targets = environments
    if not targets:
        return []
    candidate = candidate_from_marker(
        marker, policy.services[marker.service].image,
        "upstream" if environments is None else "command",
        requester if requester is not None else marker.requester,
    )
    provenance = LazyProvenance(gh, ctx, candidate,
                                policy.services[marker.service].signer_workflow)
    opener = Opener(ctx, gh, repo, promoter.merge)
    results = []
    for env in targets:
        result = await opener.open(candidate, env, provenance=provenance,
                                   explicit=environments is not None, upstream_pr=upstream_pr)
        log.info("downstream promotion %s", result.action,
                 extra={"env": env, "pull": result.number, "detail": result.message})
        results.append((env, result))
    return results


async def auto_may_open(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                        marker: PromotionMarker, environment: str) -> bool:
    """Whether `promote: auto` opens ``environment`` for the digest just merged upstream: the
    upstream still runs it (a merge event handled after a newer digest merged there opens
    nothing: the newer one's does), every other upstream of a fan-in pins it already (the last
    one to merge opens the PR), and no environment before it holds a standing failure mark of
    it (a halted wave stays halted until `/unhold`)."""
    policy = repo.policy
    env = policy.environments[environment]
    upstreams = [marker.environment, *(name for name in env.after
                                       if name != marker.environment)]
    pins = {name: (await upstream_pins(gh, repo, [marker.service], name, ctx.images))[
        marker.service] for name in upstreams}
    waiting = [name for name, pin in pins.items()
               if isinstance(pin, str) or pin[1] != marker.digest]
    if marker.environment in waiting:
        log.info("promote: auto follows what the upstream runs now", extra={
            "env": environment, "service": marker.service, "digest": marker.digest,
            "detail": f"{marker.environment} no longer runs it"})
        return False
    if waiting:
        log.info("promote: auto waits for every upstream", extra={
            "env": environment, "service": marker.service, "digest": marker.digest,
            "detail": f"not yet in {', '.join(waiting)}"})
        return False
    return not await halted(ctx, gh, repo, environment, [(marker.service, marker.digest)])


async def reevaluate_open_pulls(gates: GateService, gh: GitHubAPI, repo: IndexedRepo, *,
                                newest: int | None = None) -> None:
    """Re-run the gate of every open PR (of the ``newest`` ones, when given): upstream
    evidence may have changed for any of them."""
    pulls = await open_pulls(gh, repo.full_name)  # GitHub lists the newest first
    for pr in pulls[:newest]:
        await gates.evaluate(gh, repo, int(pr["number"]), pr)
