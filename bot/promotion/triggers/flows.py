"""From an image event to promotion PRs: the decisions shared by webhooks, commands and resync."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

from bot.domain.promotions.candidate import Candidate, release_tag_variants
from bot.domain.tags import version_from_tag
from bot.github.checks import check_output, check_run, create_check_run, is_own, update_check_run
from bot.github.limits import OUTPUT_LIMIT, fit
from bot.github.refusals import or_none
from bot.github.repos import commit_for_ref
from bot.names import POLICY_PATH, refusal_check
from bot.promotion.opening.opener import MergeAsOpened, Opener, OpenResult
from bot.promotion.opening.provenance import LazyProvenance
from bot.promotion.policies import DeploymentRepo
from bot.promotion.trains.together import promote_together
from bot.registry.errors import RegistryError
from bot.registry.lookup import kind_problem
from bot.runtime.jobmemo import remembered

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

# Refusal check runs this process posted on source commits, (repo, sha, env) → True: a
# promotion that opens later completes them (package events look on GitHub too).
PostedRefusals = cachetools.TTLCache[tuple[str, str, str], bool]


def posted_refusals() -> PostedRefusals:
    return cachetools.TTLCache(maxsize=4096, ttl=7 * 86400)


@dataclass(frozen=True)
class Promoter:
    """What opens promotions from image events: the infrastructure, what is done with a PR
    opened into an ungated `auto_merge` environment, and the refusals posted on source
    commits that a later promotion completes."""

    ctx: Context
    merge: MergeAsOpened
    refusals: PostedRefusals = field(default_factory=posted_refusals)


async def release_candidate(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, service: str,
                            release: dict[str, Any], source: str) -> Candidate | None:
    """The candidate a release names, or None while its image is not published yet.

    The image is looked up in its registry under `1.4.2`, `v1.4.2` and the git tag; a
    registry that refuses raises RegistryError (see `report_lookup_failure`).
    """
    image = repo.policy.services[service].image
    git_tag = str(release["tag_name"])
    found = await ctx.images.find_by_tags(image, release_tag_variants(git_tag))
    if found is None:
        log.info("release has no published image yet; the package event will complete it",
                 extra={"service": service, "tag": git_tag, "image": image})
        return None
    commit = await commit_for_ref(gh, source, git_tag)
    return Candidate(
        service=service, image=image, digest=found.digest, tag=found.tag,
        kind_refusal=kind_problem(f"{image}:{found.tag}", found,
                                  chart=repo.policy.services[service].is_chart),
        version=version_from_tag(git_tag), source_repo=source, trigger="release",
        source_sha=str(commit["sha"]) if commit else None, release_tag=git_tag,
        release_url=release.get("html_url"),
        package_url=ctx.images.package_page(image, found.digest),
        published_at=release.get("published_at"),
        requester=(release.get("author") or {}).get("login"),
        prerelease=bool(release.get("prerelease")),
    )


async def report_lookup_failure(promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo,
                                service: str, release: dict[str, Any], source: str,
                                error: RegistryError) -> None:
    """A release whose image the registry would not show: say so on the release commit (the
    refusal check run of every entry environment fed by releases) and in the log."""
    git_tag = str(release["tag_name"])
    log.warning("release image lookup failed: %s", error.message,
                extra={"repository": repo.full_name, "service": service, "tag": git_tag})
    commit = await commit_for_ref(gh, source, git_tag)
    if commit is None:
        return
    pending = Candidate(
        service=service, image=repo.policy.services[service].image, digest="", tag=None,
        version=version_from_tag(git_tag), source_repo=source, trigger="release",
        source_sha=str(commit["sha"]), release_tag=git_tag)
    message = (f"{error.message}.\n\nThe promotion completes when the image can be read: "
               "the `registry_package` event of the tag (GHCR) or the next resync.")
    for env in repo.policy.environments.values():
        if env.entry_from in ("release", "any"):
            await report_refusal(promoter, gh, repo, pending, env.name, message)


async def find_release(gh: GitHubAPI, source: str, service: str, image_tag: str
                       ) -> dict[str, Any] | None:
    """A published release whose git tag names this image tag (v1.4.2, 1.4.2, web-v1.4.2)."""
    version = version_from_tag(image_tag)
    for git_tag in dict.fromkeys([f"v{version}", version, image_tag, f"{service}-v{version}",
                                  f"{service}/{version}"]):
        # asked once a job: a train probes the same tags for each service of one source
        release = await remembered(("release", source.lower(), git_tag),
                                   functools.partial(_release_by_tag, gh, source, git_tag))
        if release is not None and not release.get("draft"):
            return dict(release)
    return None


async def _release_by_tag(gh: GitHubAPI, source: str, git_tag: str) -> dict[str, Any] | None:
    release = await or_none(gh.getitem(f"/repos/{source}/releases/tags/{git_tag}"), 404)
    return dict(release) if release is not None else None


async def promote_to_entry_environments(
    promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo, candidate: Candidate,
    event_kind: str, *, report_refusals: bool = True,
) -> list[tuple[str, OpenResult]]:
    """Open the candidate's PR in every entry environment that listens to `event_kind`; for
    a service of a `together: true` group, the group's train once every image is there."""
    results: list[tuple[str, OpenResult]] = []
    environments = [env for env in repo.policy.environments.values()
                    if env.entry_from in (event_kind, "any")]
    if not environments:
        return results
    ctx = promoter.ctx
    group = repo.policy.together_group_of(candidate.service)
    together = (await promote_together(ctx, gh, repo, group, candidate, environments,
                                       merge=promoter.merge)
                if group is not None else None)
    opener = Opener(ctx, gh, repo, promoter.merge)
    provenance = LazyProvenance(
        gh, ctx, candidate, repo.policy.services[candidate.service].signer_workflow)
    for index, env in enumerate(environments):
        if together is not None:
            result = together[index][1]
        else:
            result = await opener.open(candidate, env.name, provenance=provenance)
        _log_result(repo, candidate, env.name, result)
        if result.action == "refused" and report_refusals:
            await report_refusal(promoter, gh, repo, candidate, env.name, result.message)
        elif result.action in ("opened", "exists", "live") and (
                event_kind == "package" or _refused_here(promoter, candidate, env.name)):
            await complete_refusal(promoter, gh, candidate, env.name, result)
        results.append((env.name, result))
    return results


def _refusal_key(candidate: Candidate, environment: str) -> tuple[str, str, str]:
    return candidate.source_repo.lower(), candidate.source_sha or "", environment


def _refused_here(promoter: Promoter, candidate: Candidate, environment: str) -> bool:
    return bool(candidate.source_sha) and \
        _refusal_key(candidate, environment) in promoter.refusals


async def complete_refusal(promoter: Promoter, gh: GitHubAPI, candidate: Candidate,
                           environment: str, result: OpenResult) -> None:
    """A promotion refused earlier (the registry said 401, the image was not there yet) that
    has now opened: its failing refusal check run on the source commit completes as a
    success that says what happened, so the release's commit is not left red."""
    ctx = promoter.ctx
    promoter.refusals.pop(_refusal_key(candidate, environment), None)
    if not candidate.source_sha:
        return
    name = refusal_check(environment)
    try:
        for run in await _refusal_runs(gh, candidate, name):
            if run.get("conclusion") != "failure" or not is_own(run, ctx.app_id, ctx.bot_login):
                continue
            earlier = str((run.get("output") or {}).get("summary") or "")
            pull = f"#{result.number}" if result.number else "its pull request"
            done = {"opened": "opened", "exists": "open", "live": "already live"}[result.action]
            summary = (f"The promotion of {candidate.service} {candidate.version} to "
                       f"{environment} is {done}: {result.url or pull}.\n\nEarlier:\n\n"
                       f"{earlier}")
            await update_check_run(gh, candidate.source_repo, int(run["id"]), check_run(
                name, check_output(f"{candidate.service} {candidate.version} was promoted to "
                                   f"{environment}", fit(summary, OUTPUT_LIMIT)),
                conclusion="success", completed_at=ctx.clock()))
    except gidgethub.GitHubException as exc:
        log.warning("could not complete the refusal on the source commit",
                    extra={"error": str(exc), "repository": candidate.source_repo})


async def report_refusal(promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo,
                         candidate: Candidate, environment: str, message: str) -> None:
    """Tell the people who cut the release: a failing check run on the source commit."""
    if not candidate.source_sha:
        return
    ctx = promoter.ctx
    name = refusal_check(environment)
    try:
        if await _refusal_runs(gh, candidate, name):
            return
        output = check_output(
            f"{candidate.service} {candidate.version} was not promoted to {environment}",
            f"{message}\n\nDeployment repository: {repo.full_name}, policy `{POLICY_PATH}`.")
        await create_check_run(gh, candidate.source_repo, candidate.source_sha, check_run(
            name, output, conclusion="failure", completed_at=ctx.clock()))
        promoter.refusals[_refusal_key(candidate, environment)] = True
    except gidgethub.GitHubException as exc:
        log.warning("could not report the refusal on the source commit",
                    extra={"error": str(exc), "repository": candidate.source_repo})


async def _refusal_runs(gh: GitHubAPI, candidate: Candidate, name: str) -> list[dict[str, Any]]:
    """The latest check runs of that name on the candidate's source commit."""
    listed = await gh.getitem(
        f"/repos/{candidate.source_repo}/commits/{candidate.source_sha}/check-runs"
        f"?check_name={quote(name)}&filter=latest")
    return list(listed.get("check_runs") or [])


def _log_result(repo: DeploymentRepo, candidate: Candidate, env: str, result: OpenResult) -> None:
    level = logging.WARNING if result.action == "refused" else logging.INFO
    log.log(level, "promotion %s: %s", result.action, result.message,
            extra={"repository": repo.full_name, "service": candidate.service,
                   "env": env, "digest": candidate.digest, "pull": result.number})
