"""The periodic, level-triggered reconcile: GitHub's state is the truth, events only hurry it.

For each deployment repository: the newest admitted release of every service is promoted into
the entry environments (idempotent: an open or live promotion costs only conditional reads),
work a failed job left half done is finished (an auto-merge that did not happen, an older PR
left open beside a newer one, a `promote: auto` environment whose upstream merge event was
lost, a promotion branch without an open PR), the gate of every open PR is re-evaluated
(restoring soak and freeze timers), and the dashboard is refreshed. An idle resync makes only
requests that GitHub answers with `304`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cmp_to_key
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.domain.leftovers import PromotionPull, Supersede, leftover_steps
from bot.domain.policy import Service
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.marker import PromotionMarker, branch_prefix, parse_marker
from bot.domain.tags import compare_versions, is_newer, is_semver, version_from_tag
from bot.github.refusals import or_none
from bot.github.repos import get_file
from bot.manifests import ManifestError, find_images
from bot.promotion.authorship.trust import ConveyorCommit, trusted_marker, trusted_promotion
from bot.promotion.commands.command_run import CommandCapabilities
from bot.promotion.commands.rollback import watcher
from bot.promotion.dashboard.issue import DashboardCapabilities, refresh_dashboard
from bot.promotion.dashboard.status import StatusSources
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.opening.merger import UnmergedPull, merge_promotion
from bot.promotion.opening.opener import find_pull_for_branch, open_pulls
from bot.promotion.opening.superseding import close_superseded
from bot.promotion.policies import DeploymentRepo, PolicyIndex, settled
from bot.promotion.resync.release_polls import ReleasePolls
from bot.promotion.trains.flows import finish_interrupted_trains, promote_train_downstream
from bot.promotion.triggers.downstream import promote_downstream, reevaluate_open_pulls
from bot.promotion.triggers.flows import (
    Promoter,
    promote_to_entry_environments,
    release_candidate,
)
from bot.promotion.watching.watch import watched
from bot.registry.errors import RegistryError
from bot.registry.lookup import kind_problem

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

RECENT_RELEASES = 10
_PROMOTION_BRANCH = re.compile(r"conveyor/(?:rollback/)?[^/]+/[^/]+-[0-9a-f]{12}")


@dataclass(frozen=True)
class ResyncCapabilities:
    """What the reconcile reads and repairs with: every promotion capability."""

    ctx: Context
    policies: PolicyIndex
    release_polls: ReleasePolls
    gates: GateService
    promoter: Promoter
    status: StatusSources
    dashboards: DashboardCapabilities
    commands: CommandCapabilities


async def resync_all(resync: ResyncCapabilities, *, keep_for: float = 0.0) -> int:
    """Reconcile every installation; returns the number of deployment repositories seen.

    Each installation is reconciled under its lease (`ctx.leases`): with several replicas on
    Redis, one of them does it and keeps the lease `keep_for` seconds more (the rest of the
    interval), so that the others skip it and three replicas cost GitHub what one does.
    """
    ctx = resync.ctx
    app = ctx.clients.app()
    seen = 0
    async for installation in app.getiter("/app/installations?per_page=100"):
        installation_id = int(installation["id"])
        async with ctx.leases.lease(f"resync:{installation_id}", keep_for=keep_for) as mine:
            if not mine:
                continue
            try:
                gh = await ctx.clients.installation(installation_id)
                seen += await resync_installation(resync, gh, installation_id)
            except gidgethub.GitHubException as exc:
                log.warning("resync of an installation failed",
                            extra={"installation": installation_id, "error": str(exc)})
    return seen


async def resync_installation(resync: ResyncCapabilities, gh: GitHubAPI, installation_id: int
                              ) -> int:
    policies = resync.policies
    repos = await policies.load(gh, installation_id, force=True, now=resync.ctx.clock())
    size_caches(resync, installation_id, repos)
    installed = policies.installed(installation_id)
    for repo in repos:
        try:
            await resync_repo(resync, gh, repo, installed)
        except gidgethub.GitHubException as exc:
            log.warning("resync of a repository failed",
                        extra={"repository": repo.full_name, "error": str(exc)})
    return len(repos)


def size_caches(resync: ResyncCapabilities, installation_id: int, repos: list[DeploymentRepo]
                ) -> None:
    """Conditional reads only save requests while their ETags are remembered: room for what
    one resync of these policies reads (per service its release list, package versions,
    release commit and attestation; per service × environment its file and history)."""
    served = rows = 0
    for repo in repos:
        served += len(repo.policy.services)
        rows += len(repo.policy.services) * len(repo.policy.environments)
    resync.ctx.clients.ensure_etag_capacity(installation_id, 4 * served + 2 * rows + 256)
    resync.status.size_for(rows)


async def resync_repo(resync: ResyncCapabilities, gh: GitHubAPI, repo: DeploymentRepo,
                      installed: Mapping[str, str] | None = None) -> None:
    """`installed`: the installation's repositories (lower-case name → `pushed_at`), when
    known. A source outside them cannot be read with the installation's token (`404`, which
    is never conditional) and sends no events, so its releases are not asked for; of the
    others, `resync.release_polls` chooses whose releases this pass reads."""
    ctx, polls = resync.ctx, resync.release_polls
    takes_packages = bool(repo.policy.entry_environments("package"))
    takes_releases = bool(repo.policy.entry_environments("release"))
    by_source: dict[str, list[str]] = {}
    for service in repo.policy.services.values():
        if not installed or service.source.lower() in installed:
            by_source.setdefault(service.source, []).append(service.name)
    now = ctx.clock()
    pushed = {name: settled(at, now) for name, at in (installed or {}).items()}
    read = polls.due(list(by_source), pushed) if takes_releases else []
    for source, names in by_source.items():
        releases: list[dict[str, Any]] = []
        if source in read:
            releases = await _recent_releases(gh, source)
            polls.read(source, pushed.get(source.lower(), ""))
        for name in names:
            service = repo.policy.services[name]
            release = next((r for r in releases if service.tags.admits(r["tag_name"])), None)
            try:
                if release is not None:
                    await _promote_release(resync.promoter, gh, repo, name, release,
                                           source)
                if takes_packages:
                    await _promote_newest_image(resync.promoter, gh, repo, service)
            except RegistryError as exc:
                # one unreadable image never stops the pass: the next resync tries again
                log.warning("resync: image lookup failed: %s", exc.message,
                            extra={"repository": repo.full_name, "service": name})
    await resync.gates.enforcement.refresh(gh, repo)
    await finish_interrupted_promotions(ctx, resync.gates, gh, repo)
    await resume_auto_promotions(resync.promoter, gh, repo)
    if watched(repo.policy):
        await watcher(resync.commands, gh, repo).resync()
    await reevaluate_open_pulls(resync.gates, gh, repo)
    await refresh_dashboard(resync.dashboards, gh, repo)


async def _promote_release(promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo,
                           service: str, release: dict[str, Any], source: str) -> None:
    candidate = await release_candidate(promoter.ctx, gh, repo, service, release, source)
    if candidate is not None:
        await promote_to_entry_environments(promoter, gh, repo, candidate, "release",
                                            report_refusals=False)


async def _promote_newest_image(promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo,
                                service: Service) -> None:
    """The newest admitted tag in the registry, for entry environments fed by package events:
    recovers a lost `registry_package` event (and serves registries that send none)."""
    ctx = promoter.ctx
    admitted = [tag for tag in await ctx.images.tags(service.image)
                if service.tags.admits(tag) and is_semver(version_from_tag(tag))]
    if not admitted:
        return
    def order(a: str, b: str) -> int:
        return compare_versions(version_from_tag(a), version_from_tag(b)) or 0

    newest = max(admitted, key=cmp_to_key(order))
    found = await ctx.images.find_by_tags(service.image, [newest])
    if found is None:
        return
    labelled = await ctx.images.provenance(service.image, found.digest)
    same_source = (labelled.source_repo or "").lower() == service.source.lower()
    candidate = Candidate(
        service=service.name, image=service.image, digest=found.digest, tag=newest,
        kind_refusal=kind_problem(f"{service.image}:{newest}", found, chart=service.is_chart),
        version=version_from_tag(newest), source_repo=service.source, trigger="package",
        source_sha=labelled.revision if same_source else None)
    await promote_to_entry_environments(promoter, gh, repo, candidate, "package",
                                        report_refusals=False)


async def finish_interrupted_promotions(ctx: Context, gates: GateService, gh: GitHubAPI,
                                        repo: DeploymentRepo) -> None:
    """Finish what a failed job left half done on open promotion PRs and trains.

    - two open PRs for one (service, environment): the older version is closed as superseded
      (its closing failed when the newer one was opened);
    - an open PR of an ungated `auto_merge` environment still at Conveyor's commit: merged as
      the opener would have (the merge right after opening failed), after its gate and not
      when the gate fails (the edit reaches a gated environment's render), unless its file
      already pins a newer version.
    """
    # Under the repository's lock, like the opener: a promotion opened meanwhile by a webhook
    # never races with these merges and closes.
    async with ctx.locks.hold(repo.full_name):
        unmerged = await _finish_interrupted(ctx, gh, repo)
        unmerged += await finish_interrupted_trains(ctx, gh, repo,
                                                    await open_pulls(gh, repo.full_name))
        for pull in unmerged:
            await _merge_after_gate(ctx, gates, gh, repo, pull)


async def _merge_after_gate(ctx: Context, gates: GateService, gh: GitHubAPI,
                            repo: DeploymentRepo, pull: UnmergedPull) -> None:
    number = int(pull.pr["number"])
    where = {"repository": repo.full_name, "pull": number, "env": pull.env.name}
    verdict = await gates.evaluate(gh, repo, number)
    if verdict is None or verdict.conclusion != "success":
        log.info("resync: not merging a promotion whose gate does not pass", extra=where)
        return
    log.info("resync: merging a promotion whose auto-merge did not happen", extra=where)
    await merge_promotion(ctx, gh, repo.full_name, number, pull.head_sha,
                          pull.env.merge_method, environment=pull.env.name)


async def _finish_interrupted(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo
                              ) -> list[UnmergedPull]:
    """Closes the superseded promotions; returns those whose merge did not happen."""
    policy = repo.policy
    pulls = await open_pulls(gh, repo.full_name)
    await _delete_stray_branches(gh, repo.full_name, {str(pr["head"]["ref"]) for pr in pulls})
    ours: dict[int, tuple[dict[str, Any], PromotionPull]] = {}
    for pr in pulls:
        # Only what Conveyor's own commit says: an edited marker cannot make the resync close
        # the real newer promotion or merge after a person pushed.
        trusted = await trusted_marker(gh, repo.full_name, pr, ctx.bot_login)
        if trusted is None:
            continue
        marker, commit = trusted
        if not marker.is_rollback and str(pr["head"]["ref"]).startswith(
                branch_prefix(marker.environment, marker.service)):
            ours[int(pr["number"])] = (pr, PromotionPull(
                int(pr["number"]), marker.service, marker.environment, marker.version,
                at_head=commit.head))
    merging = [env.name for env in policy.environments.values()
               if env.auto_merge and not env.gated]
    unmerged: list[UnmergedPull] = []
    for step in leftover_steps([pull for _, pull in ours.values()], merging=merging,
                               services=policy.services):
        pr, pull = ours[step.pull]
        if isinstance(step, Supersede):
            await close_superseded(ctx, gh, repo.full_name, pr, step.by)
            continue
        if is_newer(await _live_tag(gh, repo, pull.service, pull.environment), pull.version):
            continue
        unmerged.append(UnmergedPull(pr, str(pr["head"]["sha"]),
                                     policy.environments[pull.environment]))
    return unmerged


async def _live_tag(gh: GitHubAPI, repo: DeploymentRepo, service: str, environment: str
                    ) -> str | None:
    """The tag the service's file pins on the default branch; None when it cannot tell."""
    current = await get_file(gh, repo.full_name, repo.policy.path_for(service, environment))
    if current is None:
        return None
    image = repo.policy.services[service]
    try:
        found = find_images(current.text, image.image, tag_key=image.tag_key)
    except ManifestError:
        return None
    return found[0].tag if found else None


async def _delete_stray_branches(gh: GitHubAPI, full_name: str, open_heads: set[str]) -> None:
    """Promotion branches live as long as their PR is open: delete those of merged or closed
    PRs (a superseded PR whose branch deletion failed) and those no PR was ever opened for (a
    job that failed between creating the branch and opening the PR). Only names in Conveyor's
    own `conveyor/<env>/<service>-<12 hex>` namespace are touched."""
    stray = []
    async for ref in gh.getiter(f"/repos/{full_name}/git/matching-refs/heads/conveyor/"):
        branch = str(ref.get("ref", "")).removeprefix("refs/heads/")
        if branch not in open_heads and _PROMOTION_BRANCH.fullmatch(branch):
            stray.append(branch)
    for branch in stray:
        pull = await find_pull_for_branch(gh, full_name, branch)
        if pull is not None and pull.get("state") == "open":
            continue
        log.info("resync: deleting a promotion branch without an open PR",
                 extra={"repository": full_name, "branch": branch,
                        "pull": pull.get("number") if pull else None})
        await or_none(gh.delete(f"/repos/{full_name}/git/refs/heads/{quote(branch, safe='/')}"),
                      404, 422)


async def resume_auto_promotions(promoter: Promoter, gh: GitHubAPI, repo: DeploymentRepo
                                 ) -> None:
    """`promote: auto` environments follow the promotion PR that last set their upstream file.

    The merge event normally opens them; when it was lost or its handling failed, this opens
    them now. The opener's rules still hold: an open, live, closed or older promotion opens
    nothing, so an idle resync only re-reads (`304`) what the dashboard reads too.
    """
    policy = repo.policy
    trains: set[tuple[str, str]] = set()  # (group, upstream) of the trains followed already
    for service in policy.services.values():
        upstreams = dict.fromkeys(upstream for env in policy.environments.values()
                                  if env.promote == "auto" for upstream in env.after)
        for upstream in upstreams:
            path = policy.path_for(service.name, upstream)
            merged = await _last_promotion_of(promoter.ctx, gh, repo.full_name, path)
            if merged is None:
                continue
            number, marker, commit = merged
            if marker.is_rollback:
                continue
            if marker.is_train and marker.environment == upstream:
                # a merged release train: the next environment gets the group's train, once
                if (marker.group or "", upstream) not in trains:
                    trains.add((marker.group or "", upstream))
                    await promote_train_downstream(promoter.ctx, gh, repo, commit,
                                                   merge=promoter.merge)
                continue
            if marker.is_train or marker.service != service.name \
                    or marker.environment != upstream:
                continue
            await promote_downstream(promoter, gh, repo, marker, number)


async def _last_promotion_of(ctx: Context, gh: GitHubAPI, full_name: str, path: str
                             ) -> tuple[int, PromotionMarker, ConveyorCommit] | None:
    """The merged promotion PR of the last commit that changed `path` on the default branch,
    with what Conveyor's own commit on it says."""
    commits = await gh.getitem(
        f"/repos/{full_name}/commits?path={quote(path, safe='/')}&per_page=1")
    if not commits:
        return None
    sha = str(commits[0]["sha"])
    pulls = await or_none(gh.getitem(f"/repos/{full_name}/commits/{sha}/pulls"), 404, 422)
    for pr in pulls or []:
        if parse_marker(pr.get("body")) is None or not (
                pr.get("merged_at") or pr.get("merge_commit_sha") == sha):
            continue
        found = await trusted_promotion(gh, full_name, pr, ctx.bot_login)
        if found is not None:
            return int(pr["number"]), *found
    return None


async def _recent_releases(gh: GitHubAPI, source: str) -> list[dict[str, Any]]:
    """The source's latest releases, drafts left out, newest first."""
    releases = await or_none(
        gh.getitem(f"/repos/{source}/releases?per_page={RECENT_RELEASES}"), 404)
    return [dict(release) for release in releases or [] if not release.get("draft")]
