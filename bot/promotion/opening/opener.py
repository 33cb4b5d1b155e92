"""Opening promotion pull requests: one per (service, environment, digest), idempotently.

Every step can be repeated after a crash or a redelivery: an open PR for the branch is adopted,
a file that already pins the digest opens nothing, a half-made branch is reset and reused.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, Self, TypeVar
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.domain.opening import (
    FileEdit,
    Opening,
    OpeningFacts,
    OpenPromotion,
    PullRef,
    Reading,
    ServiceSubject,
    decide_opening,
)
from bot.domain.policy import Environment, Policy
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.marker import (
    PromotionMarker,
    branch_name,
    branch_prefix,
)
from bot.domain.promotions.pull_text import commit_message, follows_note, pr_title
from bot.domain.promotions.refusals import refusal_for_tags
from bot.domain.provenance import Provenance
from bot.domain.tags import compare_versions, version_from_tag
from bot.github.refusals import or_none
from bot.github.repos import RepoFile, add_labels, branch_head, content_path, get_file
from bot.github.snapshot import TreeTruncated
from bot.manifests import Edit, ManifestError, promote_image
from bot.promotion.authorship.receipts import receipt_unless_signed
from bot.promotion.authorship.trust import opened_by_conveyor, trusted_marker
from bot.promotion.builds import RepoBuilds
from bot.promotion.configcheck import run_config_check
from bot.promotion.effects import PromotionEffect, promotion_effect
from bot.promotion.opening.body import Change, pr_body
from bot.promotion.opening.chart_lock import lock_refusal
from bot.promotion.opening.commits import commit_on, parent_shas
from bot.promotion.opening.provenance import LazyProvenance, with_compare
from bot.promotion.opening.superseding import close_superseded
from bot.promotion.policies import DeploymentRepo
from bot.runtime.offload import run_cpu

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

LABEL = "conveyor"
ROLLBACK_LABEL = "rollback"

OpenAction = Literal["opened", "exists", "live", "skipped", "refused"]


@dataclass(frozen=True)
class OpenResult:
    action: OpenAction
    message: str
    number: int | None = None
    url: str | None = None
    merged: bool = False

    def markdown(self) -> str:
        link = f" #{self.number}" if self.number else ""
        return f"{self.message}{link}".strip()

    @classmethod
    def declined(cls, decision: Opening) -> Self:
        """The result of a decision not to open the PR."""
        if decision.kind == "open":
            raise ValueError("a decision to open is acted on, not declined")
        pull = decision.pull
        return cls(decision.kind, decision.message, pull.number if pull else None,
                   pull.url if pull else None)


def env_label(environment: str) -> str:
    return f"env/{environment}"


def promotion_labels(environment: str, rollback: bool) -> list[str]:
    return [LABEL, env_label(environment)] + ([ROLLBACK_LABEL] if rollback else [])


async def open_pulls(gh: GitHubAPI, full_name: str) -> list[dict[str, Any]]:
    return [pr async for pr in gh.getiter(f"/repos/{full_name}/pulls?state=open&per_page=100")]


async def find_pull_for_branch(gh: GitHubAPI, full_name: str, branch: str) -> dict[str, Any] | None:
    owner = full_name.split("/", 1)[0]
    pulls = await gh.getitem(f"/repos/{full_name}/pulls?state=all&head={owner}:{branch}&per_page=5")
    return pulls[0] if pulls else None


async def open_pull(gh: GitHubAPI, full_name: str, *, branch: str, base: str, title: str,
                    body: str, bot_login: str) -> dict[str, Any]:
    """Open the pull request of ``branch``; a 422 because it already exists (a retried job)
    adopts the existing one, when it is an open PR the app opened into ``base``: anyone with
    write access can open a PR from the new branch first, into any base."""
    try:
        pull: dict[str, Any] = await gh.post(f"/repos/{full_name}/pulls", data={
            "title": title, "head": branch, "base": base, "body": body,
            "maintainer_can_modify": False,
        })
    except gidgethub.BadRequest as exc:
        if exc.status_code != 422:
            raise
        owner = full_name.split("/", 1)[0]
        existing = await gh.getitem(f"/repos/{full_name}/pulls?state=open&head={owner}:"
                                    f"{quote(branch)}&base={quote(base)}&per_page=5")
        own = [pr for pr in existing or [] if opened_by_conveyor(bot_login, pr)]
        if not own:
            raise
        pull = own[0]
    return pull


@dataclass(frozen=True)
class OpenedPull:
    """A PR Conveyor has just opened into an ungated `auto_merge` environment: ``paths``
    changed on ``base_sha`` by its commit ``head_sha``."""

    env: Environment
    number: int
    head_sha: str
    base_sha: str
    paths: tuple[str, ...]


class MergeAsOpened(Protocol):
    """What is done with a PR just opened into an ungated `auto_merge` environment, still
    under the repository's lock: whether it merged. The callers above the opener and the gate
    decide it (post the PR's gate, then merge)."""

    async def __call__(self, gh: GitHubAPI, repo: DeploymentRepo, opened: OpenedPull
                       ) -> bool: ...


@dataclass(kw_only=True)
class Found:
    """What the readings of one opening found that acting on its decision needs."""

    pulls: list[dict[str, Any]] = field(default_factory=list)  # the repository's open PRs


F = TypeVar("F", bound=Found)


class RepoOpener(ABC, Generic[F]):
    """What the promotion and the train opener share: one deployment repository and its
    policy, and the readings the opening decision asks for whatever the PR moves."""

    def __init__(self, ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                 merge: MergeAsOpened) -> None:
        self.ctx = ctx
        self.gh = gh
        self.repo = repo
        self.merge = merge
        self.policy: Policy = repo.policy
        self.default_branch = repo.default_branch

    async def _decide(self, facts: OpeningFacts, found: F) -> tuple[Opening, OpeningFacts]:
        """Read what :func:`decide_opening` asks for until it decides; the decision and the
        facts it rests on."""
        while not isinstance(reading := decide_opening(facts), Opening):
            facts = await self._read(reading, facts, found)
        return reading, facts

    async def _read(self, reading: Reading, facts: OpeningFacts, found: F) -> OpeningFacts:
        repo = self.repo.full_name
        if reading == "open_pulls":
            found.pulls = await open_pulls(self.gh, repo)
            by_head: dict[str, PullRef] = {}
            for pr in found.pulls:
                by_head.setdefault(str(pr["head"]["ref"]), _pull_ref(pr))
            return replace(facts, open_pulls=by_head)
        if reading == "earlier_pulls" and facts.branch is not None:
            earlier = await find_pull_for_branch(self.gh, repo, facts.branch)
            return replace(facts, earlier_pulls=(_pull_ref(earlier),) if earlier else ())
        return await self._read_subject(reading, facts, found)

    @abstractmethod
    async def _read_subject(self, reading: Reading, facts: OpeningFacts, found: F
                            ) -> OpeningFacts:
        """The readings about what the PR moves: its files, its service's promotions."""

    async def _label_adopted(self, decision: Opening, found: F, labels: list[str]) -> None:
        """An open PR of the branch is adopted: the labels a job killed right after opening
        it never added are added now (only to a PR the app opened)."""
        if decision.kind != "exists" or decision.pull is None:
            return
        pull = next((pr for pr in found.pulls if int(pr["number"]) == decision.pull.number),
                    None)
        if pull is None or not opened_by_conveyor(self.ctx.bot_login, pull):
            return
        present = {str(label.get("name")) for label in pull.get("labels") or []}
        missing = [label for label in labels if label not in present]
        if missing:
            await add_labels(self.gh, self.repo.full_name, decision.pull.number, missing)

    async def _merge_ungated(self, env: Environment, number: int, head_sha: str,
                             base_sha: str, paths: Sequence[str]) -> bool:
        """Merge a new PR into an ungated ``auto_merge`` environment (``paths`` changed on
        ``base_sha``) as the caller's ``merge`` decides; a PR that waits gets its config
        check here, which its opened event leaves to its opener."""
        if not env.auto_merge or env.gated:
            return False
        merged = await self.merge(self.gh, self.repo,
                                  OpenedPull(env, number, head_sha, base_sha, tuple(paths)))
        if not merged:
            await run_config_check(self.ctx, self.gh, self.repo.full_name, self.policy,
                                   head_sha, list(paths))
        return merged

    async def _create_branch(self, branch: str, sha: str) -> None:
        """Create ``branch`` at ``sha``; one left behind by an interrupted attempt is reset
        (no open PR uses it: the decision adopts an open PR of the branch)."""
        repo = self.repo.full_name
        created = await or_none(self.gh.post(f"/repos/{repo}/git/refs",
                                             data={"ref": f"refs/heads/{branch}", "sha": sha}),
                                422)
        if created is None:
            log.info("reusing a leftover branch", extra={"branch": branch})
            await self.gh.patch(f"/repos/{repo}/git/refs/heads/{branch}",
                                data={"sha": sha, "force": True})


A = TypeVar("A")
B = TypeVar("B")


async def both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both awaited at once; when one fails, its error once the other is done too (no work
    left running behind the caller's back)."""
    one, other = await asyncio.gather(first, second, return_exceptions=True)
    if isinstance(one, BaseException):
        raise one
    if isinstance(other, BaseException):
        raise other
    return one, other


def _pull_ref(pr: dict[str, Any]) -> PullRef:
    return PullRef(int(pr["number"]), str(pr["html_url"]))


@dataclass(kw_only=True)
class _Promotion(Found):
    candidate: Candidate
    file: RepoFile | None = None  # the service's file at the default branch's head
    edit: Edit | None = None  # the candidate's digest set in it
    change: Change | None = None  # what the edit changes, for the PR's text
    base_sha: str | None = None  # the default branch's head the edit was built at


class Opener(RepoOpener[_Promotion]):
    """Opens, adopts and supersedes promotion PRs in one deployment repository."""

    async def open(
        self,
        candidate: Candidate,
        environment: str,
        *,
        provenance: Provenance | LazyProvenance | None = None,
        explicit: bool = False,
        rollback_note: str | None = None,
        upstream_pr: int | None = None,
    ) -> OpenResult:
        """Open the PR that sets ``candidate`` in ``environment``, or say why not.

        Idempotent: an open PR of the same branch is returned (``exists``); a file that pins
        the digest already opens nothing (``live``). Unless ``explicit`` (a command), a newer
        version live or promoted, or a PR of the branch closed without merging, opens nothing
        (``skipped``). A tag the environment's policy does not admit is ``refused`` unless
        ``rollback_note`` makes it a rollback. An opened PR closes the service's older open
        promotions into the environment and, in an ungated ``auto_merge`` environment, is
        merged at once (``merged``).
        """
        env = self.policy.environments[environment]
        rollback = rollback_note is not None
        refusal = candidate.kind_refusal or refusal_for_tags(
            self.policy, candidate.service, environment, candidate)
        path = self.policy.path_for(candidate.service, environment)
        facts = OpeningFacts(
            subject=ServiceSubject(candidate.service, candidate.version, path),
            environment=environment, rollback=rollback, explicit=explicit,
            tag_refusals=(refusal,) if refusal else (),
            branch=branch_name(environment, candidate.service, candidate.digest,
                               rollback=rollback))
        decided = decide_opening(facts)
        if isinstance(decided, Opening):  # on the policy alone, before any reading
            return OpenResult.declined(decided)
        repo = self.repo.full_name
        found = _Promotion(candidate=candidate)
        async with self.ctx.locks.hold(repo):
            decision, _ = await self._decide(facts, found)
            await self._label_adopted(decision, found, promotion_labels(environment, rollback))
            file, edit, change = found.file, found.edit, found.change
            if decision.kind != "open" or file is None or edit is None or change is None:
                return OpenResult.declined(decision)
            branch = str(facts.branch)
            base_sha = found.base_sha or await branch_head(self.gh, repo, self.default_branch)
            # what the body links is read while the branch is made: neither needs the other
            with_link, _ = await both(self._described(candidate, provenance, change.old_tag),
                                      self._create_branch(branch, base_sha))
            number, url, head_sha = await self._create(
                candidate, env, branch, path, file.sha, edit.new_text, change,
                with_link, rollback_note, upstream_pr, base_sha,
            )
            if not rollback:
                await self._supersede(candidate, environment, branch, number, found.pulls)
            # Still under the repository's lock: a newer promotion of the same service is
            # opened after this merge, from the new base, so the two PRs never conflict.
            merged = await self._merge_ungated(env, number, head_sha, base_sha, [path])
        self.ctx.metrics.promotions.labels(environment, "opened").inc()
        log.info("promotion opened", extra={"repository": repo, "pull": number,
                                            "service": candidate.service, "env": environment,
                                            "digest": candidate.digest})
        return OpenResult("opened", "opened", number, url, merged=merged)

    async def _described(self, candidate: Candidate,
                         provenance: Provenance | LazyProvenance | None,
                         old_tag: str | None) -> Provenance:
        """The provenance the body links, with the compare view from ``old_tag``: the
        attestation and the compare are read at once."""
        async def gathered() -> Provenance:
            if isinstance(provenance, LazyProvenance):
                return await provenance.get()
            return provenance or Provenance()

        found, compared = await both(gathered(), with_compare(
            self.gh, Provenance(), candidate, old_tag, self.ctx.web_url))
        return replace(found, compare=compared.compare)

    async def _read_subject(self, reading: Reading, facts: OpeningFacts, found: _Promotion
                            ) -> OpeningFacts:
        subject = facts.subject
        if not isinstance(subject, ServiceSubject):
            raise TypeError(f"a promotion opens one service, not {subject}")
        if reading == "edit":
            return replace(facts, edit=await self._edit(subject, facts.environment,
                                                        found))
        if reading == "promotions":
            promotions = await self._promotions_of(found.pulls, facts.environment,
                                                   subject.service)
            return replace(facts, promotions=tuple(
                OpenPromotion(int(pr["number"]), marker.version) for pr, marker in promotions))
        raise ValueError(f"a promotion does not read {reading}")

    async def _edit(self, subject: ServiceSubject, environment: str, found: _Promotion
                    ) -> FileEdit:
        """The candidate's digest set in the service's file at the default branch's head (read
        through the tree where the environment is built: the build needs it anyway)."""
        builds = RepoBuilds(self.ctx, self.gh, self.repo.full_name, self.default_branch)
        if builds.rendering:
            found.base_sha = await branch_head(self.gh, self.repo.full_name,
                                               self.default_branch)
            try:
                found.file = await builds.file(found.base_sha, subject.path)
            except TreeTruncated:
                found.file = await get_file(self.gh, self.repo.full_name, subject.path,
                                            found.base_sha)
        else:
            found.file = await get_file(self.gh, self.repo.full_name, subject.path)
        if found.file is None:
            return FileEdit(f"`{subject.path}` does not exist on {self.default_branch}")
        service = self.policy.services[subject.service]
        try:
            found.edit = await run_cpu(
                len(found.file.text), promote_image, found.file.text, image=service.image,
                tag=found.candidate.tag, digest=found.candidate.digest, path=subject.path,
                tag_key=service.tag_key)
        except ManifestError as exc:
            return FileEdit(f"cannot edit {exc}")
        stale = await lock_refusal(self.gh, self.repo.full_name, service, subject.path,
                                   found.base_sha)
        if stale is not None:
            return FileEdit(stale)
        before = found.edit.occurrences[0] if found.edit.occurrences else None
        effect = PromotionEffect()
        if found.edit.changed and found.base_sha is not None:
            effect = await promotion_effect(builds, found.base_sha, self.policy, environment,
                                            subject.service, {subject.path: found.edit.new_text})
            if effect.changes_nothing:
                return FileEdit(effect.refusal(service.image))
        found.change = Change(subject.path, before.tag if before else None,
                              before.digest if before else None, found.edit.notes, effect)
        return FileEdit(changed=found.edit.changed, live_tag=found.change.old_tag)

    async def _promotions_of(self, pulls: list[dict[str, Any]], environment: str, service: str
                             ) -> list[tuple[dict[str, Any], PromotionMarker]]:
        """Open promotion PRs of one service and environment that Conveyor opened, with the
        facts of Conveyor's own commit: an edited marker or a look-alike branch decides
        nothing (release trains are left to the train opener)."""
        prefix = branch_prefix(environment, service)
        found = []
        for pr in pulls:
            if not pr["head"]["ref"].startswith(prefix):
                continue
            trusted = await trusted_marker(self.gh, self.repo.full_name, pr, self.ctx.bot_login)
            if trusted is not None and trusted[0].service == service \
                    and trusted[0].environment == environment:
                found.append((pr, trusted[0]))
        return found

    async def _create(
        self, candidate: Candidate, env: Environment, branch: str, path: str, blob_sha: str,
        new_text: str, change: Change, provenance: Provenance, rollback_note: str | None,
        upstream_pr: int | None, base_sha: str,
    ) -> tuple[int, str, str]:
        repo = self.repo.full_name
        rollback = rollback_note is not None
        from_version = version_from_tag(change.old_tag) if change.old_tag else None
        message = commit_message(candidate, env.name, rollback=rollback,
                                 from_version=from_version)
        committed = await self.gh.put(
            f"/repos/{repo}/contents/{content_path(path)}",
            data={
                "message": message,
                "content": base64.b64encode(new_text.encode()).decode(),
                "sha": blob_sha,
                "branch": branch,
            },
        )
        commit = committed["commit"]
        if parent_shas(commit) != [base_sha]:
            commit = await self._commit_again(branch, base_sha, path, new_text, message)
        head_sha = str(commit["sha"])
        await receipt_unless_signed(self.ctx, self.gh, repo, commit,
                                    f"{'Rollback of' if rollback else 'Promotion of'} "
                                    f"{candidate.service} {candidate.version} in {env.name}.")
        marker = PromotionMarker(
            service=candidate.service, environment=env.name, digest=candidate.digest,
            tag=candidate.tag, version=candidate.version, paths=(path,),
            source_repo=candidate.source_repo, source_sha=candidate.source_sha,
            requester=candidate.requester, kind="rollback" if rollback else "promotion",
            commit=head_sha, previous_digest=change.old_digest, previous_tag=change.old_tag,
            release_tag=candidate.release_tag, upstream_pr=upstream_pr,
        )
        upstream_note = follows_note(env, upstream_pr) if upstream_pr else None
        body = pr_body(candidate, env, [change], provenance, marker,
                       upstream_note=upstream_note, rollback_note=rollback_note)
        pull = await open_pull(
            self.gh, repo, branch=branch, base=self.default_branch, body=body,
            bot_login=self.ctx.bot_login,
            title=pr_title(candidate, env.name, rollback=rollback, from_version=from_version))
        await add_labels(self.gh, repo, int(pull["number"]), promotion_labels(env.name, rollback))
        return int(pull["number"]), str(pull["html_url"]), head_sha

    async def _commit_again(self, branch: str, base_sha: str, path: str, new_text: str,
                            message: str) -> dict[str, Any]:
        """The contents API commits on whatever the branch holds: someone pushed to the new
        branch before Conveyor's commit, and their changes would ride under it into the PR
        (and past a gate that judges Conveyor's one edit). The edit is made again on
        ``base_sha`` alone and the branch forced to it; a push after that sits on top of
        Conveyor's commit, where every reading of the PR sees it."""
        repo = self.repo.full_name
        log.warning("someone pushed to a new promotion branch before Conveyor's commit; "
                    "committing again on the base", extra={"branch": branch})
        commit = await commit_on(self.gh, repo, base_sha, {path: new_text}, message)
        await self.gh.patch(f"/repos/{repo}/git/refs/heads/{branch}",
                            data={"sha": commit["sha"], "force": True})
        return commit

    async def _supersede(self, candidate: Candidate, environment: str, branch: str, number: int,
                         pulls: list[dict[str, Any]]) -> None:
        for pr, marker in await self._promotions_of(pulls, environment, candidate.service):
            if pr["head"]["ref"] == branch:
                continue
            order = compare_versions(marker.version, candidate.version)
            if order is not None and order > 0:
                continue  # an older version never supersedes a newer one
            await close_superseded(self.ctx, self.gh, self.repo.full_name, pr, number)
