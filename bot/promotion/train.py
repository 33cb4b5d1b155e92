"""Opening release trains: one pull request that moves several services of a group at once.

The edits of every service are applied in sequence to the files as they are at the default
branch's head (several services may share one file), and the result becomes one commit made
through the Git Data API — one tree, one commit, one ref, whatever the number of services —
so a train of thirty services costs the same few content-creating requests as a train of two.
Like single promotions it is idempotent: the branch is named by the digests it sets, an open
pull request for it is adopted, and a leftover branch is reset and reused.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import gidgethub
from gidgethub.abc import GitHubAPI

from ..domain.policy import Policy
from ..domain.provenance import Provenance
from ..domain.tags import version_from_tag
from ..domain.trains import ALL_GROUP, train_digest
from ..github.repos import add_labels, branch_head, get_file
from ..manifests import ManifestError, find_images, promote_image
from .body import Change
from .candidates import Candidate
from .marker import (
    PromotionMarker,
    TrainMember,
    branch_prefix,
    parse_marker,
    train_branch_name,
    train_prefix,
)
from .merger import merge_promotion
from .opener import (
    LABEL,
    ROLLBACK_LABEL,
    close_superseded,
    env_label,
    find_pull_for_branch,
    open_pulls,
    refusal_for_tags,
)
from .policies import DeploymentRepo
from .provenance import gather_provenance, with_compare
from .train_body import Move, TrainTooLarge, train_body, train_commit_message, train_title
from .trust import opened_by_conveyor

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

TRAIN_LABEL = "train"
FILE_MODE = "100644"


@dataclass(frozen=True)
class TrainResult:
    action: str  # "opened" | "exists" | "live" | "skipped" | "refused"
    message: str
    number: int | None = None
    url: str | None = None
    merged: bool = False
    moved: tuple[str, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()  # (service, version) already at their digest
    superseded: tuple[int, ...] = ()


@dataclass
class _Plan:
    """The edits of a train against one base commit."""

    base_sha: str
    texts: dict[str, str] = field(default_factory=dict)  # path → text after the edits
    changed: list[str] = field(default_factory=list)  # paths the train changes, in order
    moves: list[tuple[Candidate, Change]] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)


class TrainOpener:
    """Opens, adopts and supersedes release-train PRs in one deployment repository."""

    def __init__(self, ctx: Context, gh: GitHubAPI, repo: DeploymentRepo) -> None:
        if repo.policy is None:
            raise ValueError(f"{repo.full_name} has no valid policy")
        self.ctx = ctx
        self.gh = gh
        self.repo = repo
        self.policy: Policy = repo.policy

    async def open(self, group: str, environment: str, candidates: Sequence[Candidate], *,
                   requester: str | None, rollback_note: str | None = None,
                   superseding: Sequence[str] = (), explicit: bool = True) -> TrainResult:
        """Open the train of ``candidates`` (one per service) into ``environment``.

        ``superseding``: the services whose single-service PRs into the environment this
        train closes (the whole group, for a forward train). Unless ``explicit`` (a command),
        a train whose pull request was closed without merging is not opened again.
        """
        rollback = rollback_note is not None
        if not rollback:
            refusals = [refusal for c in candidates
                        if (refusal := refusal_for_tags(self.policy, c.service, environment, c))]
            if refusals:
                return TrainResult("refused", "; ".join(refusals))
        repo = self.repo.full_name
        async with self.ctx.locks.hold(repo):
            plan = await self._plan(candidates, environment)
            if isinstance(plan, str):
                return TrainResult("refused", plan)
            left_out = tuple(plan.left_out)
            if not plan.moves:
                return TrainResult("live", f"every service of {group} already runs that digest "
                                           f"in {environment}", left_out=left_out)
            digest = train_digest(c.digest for c, _ in plan.moves)
            branch = train_branch_name(environment, group, digest, rollback=rollback)
            pulls = await open_pulls(self.gh, repo)
            existing = next((pr for pr in pulls if pr["head"]["ref"] == branch), None)
            moved = tuple(c.service for c, _ in plan.moves)
            if existing is not None:
                return TrainResult("exists", "already open:", int(existing["number"]),
                                   str(existing["html_url"]), moved=moved, left_out=left_out)
            if not explicit:
                closed = await find_pull_for_branch(self.gh, repo, branch)
                if closed is not None:
                    return TrainResult("skipped", "closed without merging; "
                                       f"`/promote {environment} {group}` opens it again:",
                                       int(closed["number"]), str(closed["html_url"]),
                                       moved=moved, left_out=left_out)
            moves = [Move(c, change, await self._provenance(c, change)) for c, change in plan.moves]
            try:
                number, url, head_sha = await self._create(
                    group, environment, branch, digest, plan, moves, requester, rollback_note)
            except TrainTooLarge as exc:
                return TrainResult("refused", str(exc), moved=moved, left_out=left_out)
            superseded: list[int] = []
            if not rollback:
                superseded = await self._supersede(group, environment, branch, number, pulls,
                                                   superseding)
            merged = await self._auto_merge(environment, number, head_sha)
        self.ctx.metrics.promotions.labels(environment, "opened").inc()
        log.info("release train opened", extra={"repository": repo, "pull": number,
                                                "group": group, "env": environment,
                                                "services": len(moves)})
        return TrainResult("opened", "opened", number, url, merged=merged, moved=moved,
                           left_out=left_out, superseded=tuple(superseded))

    async def _plan(self, candidates: Sequence[Candidate], environment: str) -> _Plan | str:
        """Every service's edit applied in turn to the files at the base commit, or why not."""
        repo = self.repo.full_name
        plan = _Plan(await branch_head(self.gh, repo, self.repo.default_branch))
        for candidate in candidates:
            path = self.policy.path_for(candidate.service, environment)
            if path not in plan.texts:
                current = await get_file(self.gh, repo, path, plan.base_sha)
                if current is None:
                    return (f"`{path}` ({candidate.service}) does not exist on "
                            f"{self.repo.default_branch}")
                plan.texts[path] = current.text
            image = self.policy.services[candidate.service].image
            try:
                edit = promote_image(plan.texts[path], image=image, tag=candidate.tag,
                                     digest=candidate.digest, path=path,
                                     tag_key=self.policy.services[candidate.service].tag_key)
            except ManifestError as exc:
                return f"cannot edit {candidate.service}: {exc}"
            if not edit.changed:
                plan.left_out.append((candidate.service, candidate.version))
                continue
            before = edit.occurrences[0] if edit.occurrences else None
            plan.texts[path] = edit.new_text
            if path not in plan.changed:
                plan.changed.append(path)
            plan.moves.append((candidate, Change(path, before.tag if before else None,
                                                 before.digest if before else None, edit.notes)))
        return plan

    async def _provenance(self, candidate: Candidate, change: Change) -> Provenance:
        provenance = await gather_provenance(self.gh, candidate, self.ctx.web_url)
        return await with_compare(self.gh, provenance, candidate, change.old_tag,
                                  self.ctx.web_url)

    async def _create(self, group: str, environment: str, branch: str, digest: str,
                      plan: _Plan, moves: list[Move], requester: str | None,
                      rollback_note: str | None) -> tuple[int, str, str]:
        repo = self.repo.full_name
        env = self.policy.environments[environment]
        rollback = rollback_note is not None
        marker = PromotionMarker(
            service=group, environment=environment, digest=digest, tag=None,
            version=f"{len(moves)} services", paths=tuple(plan.changed), source_repo="",
            requester=requester, kind="rollback" if rollback else "train", group=group,
            members=tuple(TrainMember(
                service=m.candidate.service, digest=m.candidate.digest, tag=m.candidate.tag,
                version=m.candidate.version, path=m.change.path,
                previous_digest=m.change.old_digest, previous_tag=m.change.old_tag,
                source_sha=m.candidate.source_sha) for m in moves),
        )
        # Rendered before anything is written: a train too large for one body writes nothing.
        train_body(group, env, moves, plan.left_out, marker, rollback_note=rollback_note)
        head_sha = await self._commit(branch, plan, train_commit_message(
            group, environment, moves, rollback=rollback, requester=requester))
        marker = replace(marker, commit=head_sha)
        body = train_body(group, env, moves, plan.left_out, marker, rollback_note=rollback_note)
        try:
            pull = await self.gh.post(f"/repos/{repo}/pulls", data={
                "title": train_title(group, environment, len(moves), rollback=rollback),
                "head": branch, "base": self.repo.default_branch, "body": body,
                "maintainer_can_modify": False,
            })
        except gidgethub.BadRequest as exc:
            if exc.status_code != 422:
                raise
            pull = await find_pull_for_branch(self.gh, repo, branch)
            if pull is None:
                raise
        labels = [LABEL, env_label(environment), TRAIN_LABEL] + (
            [ROLLBACK_LABEL] if rollback else [])
        await add_labels(self.gh, repo, int(pull["number"]), labels)
        return int(pull["number"]), str(pull["html_url"]), head_sha

    async def _commit(self, branch: str, plan: _Plan, message: str) -> str:
        """One tree (the new texts inline: GitHub writes their blobs), one commit, one ref."""
        repo = self.repo.full_name
        base = await self.gh.getitem(f"/repos/{repo}/git/commits/{plan.base_sha}")
        tree = await self.gh.post(f"/repos/{repo}/git/trees", data={
            "base_tree": base["tree"]["sha"],
            "tree": [{"path": path, "mode": FILE_MODE, "type": "blob",
                      "content": plan.texts[path]} for path in plan.changed],
        })
        commit = await self.gh.post(f"/repos/{repo}/git/commits", data={
            "message": message, "tree": tree["sha"], "parents": [plan.base_sha],
        })
        sha = str(commit["sha"])
        try:
            await self.gh.post(f"/repos/{repo}/git/refs",
                               data={"ref": f"refs/heads/{branch}", "sha": sha})
        except gidgethub.BadRequest as exc:
            if exc.status_code != 422:
                raise
            # Left behind by an interrupted attempt: no open PR uses it (checked before).
            log.info("reusing a leftover branch", extra={"branch": branch})
            await self.gh.patch(f"/repos/{repo}/git/refs/heads/{branch}",
                                data={"sha": sha, "force": True})
        return sha

    async def _supersede(self, group: str, environment: str, branch: str, number: int,
                         pulls: list[dict[str, Any]], services: Sequence[str]) -> list[int]:
        """Close the older open train of (group, environment) and the single-service PRs of
        the group's services into the environment: this train was opened after all of them."""
        trains = train_prefix(environment, group)
        singles = tuple(branch_prefix(environment, service) for service in services)
        closed = []
        for pr in pulls:
            ref = str(pr["head"]["ref"])
            if ref == branch or not opened_by_conveyor(self.ctx.bot_login, pr):
                continue
            marker = parse_marker(pr.get("body"))
            if marker is None:
                continue
            older_train = ref.startswith(trains) and marker.group == group
            single = (ref.startswith(singles) and not marker.is_train
                      and marker.kind == "promotion")
            if older_train or single:
                await close_superseded(self.ctx, self.gh, self.repo.full_name, pr, number)
                closed.append(int(pr["number"]))
        return closed

    async def _auto_merge(self, environment: str, number: int, head_sha: str) -> bool:
        env = self.policy.environments[environment]
        if not env.auto_merge or env.gated:
            return False
        return await merge_promotion(self.ctx, self.gh, self.repo.full_name, number, head_sha,
                                     env.merge_method)


async def upstream_pins(gh: GitHubAPI, repo: DeploymentRepo, services: Sequence[str],
                        upstream: str) -> dict[str, tuple[str | None, str] | str]:
    """Per service, the (tag, digest) its file in ``upstream`` pins on the default branch —
    the `merged` evidence a downstream gate looks for — or why there is none."""
    policy = repo.policy
    assert policy is not None
    texts: dict[str, str | None] = {}
    pins: dict[str, tuple[str | None, str] | str] = {}
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


CandidateFor = Callable[[str, str | None, str], Awaitable[Candidate]]


async def promote_group(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, group: str,
                        environment: str, *, requester: str | None,
                        candidate_for: CandidateFor, explicit: bool = True) -> TrainResult:
    """The train of ``group`` (every service for ``all``) into ``environment`` at the digests
    its upstream environment pins now; ``candidate_for(service, tag, digest)`` tells what is
    known about each."""
    policy = repo.policy
    assert policy is not None
    services = (list(policy.services) if group == ALL_GROUP
                else list(policy.groups[group].services))
    upstream = policy.environments[environment].after
    assert upstream is not None
    pins = await upstream_pins(gh, repo, services, upstream)
    unpinned = [f"{service} ({pin})" for service, pin in pins.items() if isinstance(pin, str)]
    if unpinned:
        return TrainResult("refused", f"the train takes every service's digest from "
                                      f"{upstream}, and these have none there: "
                                      f"{'; '.join(unpinned)}")
    candidates = [await candidate_for(service, pin[0], pin[1]) for service, pin in pins.items()
                  if not isinstance(pin, str)]
    return await TrainOpener(ctx, gh, repo).open(group, environment, candidates,
                                                 requester=requester, superseding=services,
                                                 explicit=explicit)


def known_candidates(repo: DeploymentRepo, marker: PromotionMarker, trigger: str
                     ) -> CandidateFor:
    """Candidates from the policy and what an upstream train's marker says of each digest."""
    policy = repo.policy
    assert policy is not None
    by_digest = {(member.service, member.digest): member for member in marker.members}

    async def candidate_for(service: str, tag: str | None, digest: str) -> Candidate:
        member = by_digest.get((service, digest))
        settings = policy.services[service]
        return Candidate(
            service=service, image=settings.image, digest=digest, tag=tag,
            version=version_from_tag(tag) if tag else digest[:19], source_repo=settings.source,
            trigger=trigger, source_sha=member.source_sha if member else None,
            requester=marker.requester,
        )

    return candidate_for


async def promote_train_downstream(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                                   marker: PromotionMarker) -> list[tuple[str, TrainResult]]:
    """A merged train opens the same group's train in each `promote: auto` environment after
    it."""
    policy = repo.policy
    group = marker.group
    if policy is None or group is None or marker.kind != "train" or (
            group != ALL_GROUP and group not in policy.groups):
        return []
    results = []
    for env in policy.downstream_of(marker.environment):
        if env.promote != "auto":
            continue
        result = await promote_group(ctx, gh, repo, group, env.name,
                                     requester=marker.requester,
                                     candidate_for=known_candidates(repo, marker, "upstream"),
                                     explicit=False)
        log.info("downstream train %s", result.action,
                 extra={"env": env.name, "group": group, "pull": result.number,
                        "detail": result.message})
        results.append((env.name, result))
    return results


async def finish_interrupted_trains(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                                    pulls: list[dict[str, Any]]) -> None:
    """Resync, under the repository's lock: of two open trains of one (group, environment),
    the older is closed as superseded (its closing failed when the newer one was opened); a
    train of an ungated `auto_merge` environment still at Conveyor's commit is merged."""
    policy = repo.policy
    assert policy is not None
    newest: dict[tuple[str, str], int] = {}
    trains: list[tuple[dict[str, Any], PromotionMarker]] = []
    for pr in pulls:
        marker = parse_marker(pr.get("body"))
        if (marker is None or marker.kind != "train" or marker.group is None
                or not opened_by_conveyor(ctx.bot_login, pr)
                or not str(pr["head"]["ref"]).startswith(
                    train_prefix(marker.environment, marker.group))):
            continue
        trains.append((pr, marker))
        key = (marker.group, marker.environment)
        newest[key] = max(newest.get(key, 0), int(pr["number"]))
    for pr, marker in trains:
        assert marker.group is not None
        winner = newest[(marker.group, marker.environment)]
        if winner != int(pr["number"]):
            await close_superseded(ctx, gh, repo.full_name, pr, winner)
            continue
        env = policy.environments.get(marker.environment)
        if env is None or not env.auto_merge or env.gated or marker.commit != pr["head"]["sha"]:
            continue
        log.info("resync: merging a train whose auto-merge did not happen",
                 extra={"repository": repo.full_name, "pull": pr["number"]})
        await merge_promotion(ctx, gh, repo.full_name, int(pr["number"]), str(marker.commit),
                              env.merge_method)
