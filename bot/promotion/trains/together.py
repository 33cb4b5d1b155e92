"""Groups with ``together: true``: a release enters its entry environments as one train.

A release (or an image event) of one service of such a group looks up the image of the same
version for every other service of the group. While one is missing it opens nothing and
waits: the event that publishes the last image, or the resync, asks again and then opens one
train per entry environment. Asking again is harmless: the train's branch is named by its
digests, so an open train is found and a merged one finds every file already at its digest.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Environment, Group
from bot.domain.promotions.candidate import Candidate
from bot.domain.tags import version_from_tag
from bot.github.repos import commit_for_ref, get_file
from bot.promotion.evidence.finder import pins
from bot.promotion.opening.opener import MergeAsOpened, OpenResult
from bot.promotion.policies import DeploymentRepo
from bot.promotion.trains.opener import TrainOpener

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)


def tag_variants(service: str, candidate: Candidate) -> list[str]:
    """Image tags under which ``service``'s image of the candidate's version may be
    published: the candidate's own tag first, then the usual spellings of the version."""
    version = candidate.version
    variants = [candidate.tag or "", version, f"v{version}", candidate.release_tag or "",
                f"{service}-v{version}", f"{service}-{version}"]
    return [tag for tag in dict.fromkeys(variants) if tag]


async def member_candidate(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, service: str,
                           candidate: Candidate) -> Candidate | None:
    """The image of ``service`` for the candidate's version, or None while it is missing."""
    if service == candidate.service:
        return candidate
    settings = repo.policy.services[service]
    variants = [tag for tag in tag_variants(service, candidate) if settings.tags.admits(tag)]
    found = await ctx.images.find_by_tags(settings.image, variants) if variants else None
    if found is None or found.tag is None:
        return None
    tag = found.tag
    same_source = settings.source.lower() == candidate.source_repo.lower()
    # one release of a monorepo feeds the service when its tag policy admits the release's tag
    release_tag = candidate.release_tag if same_source and candidate.release_tag and \
        settings.tags.admits(candidate.release_tag) else None
    source_sha = candidate.source_sha if release_tag else None
    if source_sha is None and release_tag:
        commit = await commit_for_ref(gh, settings.source, release_tag)
        source_sha = str(commit["sha"]) if commit else None
    return replace(
        candidate, service=service, image=settings.image, digest=found.digest, tag=tag,
        version=version_from_tag(tag), source_repo=settings.source, source_sha=source_sha,
        release_tag=release_tag, release_url=candidate.release_url if release_tag else None,
        package_url=ctx.images.package_page(settings.image, found.digest), published_at=None,
    )


async def promote_together(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, group: Group,
                           candidate: Candidate, environments: list[Environment], *,
                           merge: MergeAsOpened) -> list[tuple[str, OpenResult]]:
    if await _live_everywhere(gh, repo, candidate, environments):
        # The group's train of this version is merged (or the service was promoted on its
        # own): no need to look up the other images again, which keeps a resync that meets
        # every service of the group from costing a lookup per pair of services.
        message = f"{candidate.service} {candidate.version} is already live"
        return [(env.name, OpenResult("live", message)) for env in environments]
    members: list[Candidate] = []
    missing: list[str] = []
    for service in group.services:
        member = await member_candidate(ctx, gh, repo, service, candidate)
        if member is None:
            missing.append(service)
        else:
            members.append(member)
    if missing:
        message = (f"{group.name} moves together: waiting for the {candidate.version} image of "
                   f"{', '.join(missing)}")
        log.info("release train waits for images", extra={
            "repository": repo.full_name, "group": group.name, "missing": missing,
            "version": candidate.version})
        return [(env.name, OpenResult("skipped", message)) for env in environments]
    opener = TrainOpener(ctx, gh, repo, merge)
    results = []
    for env in environments:
        train = await opener.open(group.name, env.name, members, requester=candidate.requester,
                                  superseding=group.services, explicit=False)
        results.append((env.name, OpenResult(train.action, train.message, train.number,
                                             train.url, merged=train.merged)))
    return results


async def _live_everywhere(gh: GitHubAPI, repo: DeploymentRepo, candidate: Candidate,
                           environments: list[Environment]) -> bool:
    service = repo.policy.services[candidate.service]
    for env in environments:
        path = repo.policy.path_for(service.name, env.name)
        found = await get_file(gh, repo.full_name, path)
        tag_keys = (service.tag_key,) if service.tag_key else ()
        if not pins(found.text if found else None, service.image, candidate.digest, path,
                    tag_keys):
            return False
    return True
