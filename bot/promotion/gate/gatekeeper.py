"""The gate's edge: gather the facts of one PR, ask the pure verdict, post the check run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gidgethub.abc import GitHubAPI

from bot.domain.freeze import freeze_status
from bot.domain.gate.model import NO_GATED_CHANGE, EnvironmentRules, Evidence, GateInput, Verdict
from bot.domain.gate.verdict import evaluate_gate
from bot.github.snapshot import TreeTruncated
from bot.names import POLICY_PATH
from bot.promotion.authorship.trust import trusted_pull
from bot.promotion.builds import RepoBuilds
from bot.promotion.evidence.finder import EvidenceFinder
from bot.promotion.gate.approvals import Approvals
from bot.promotion.gate.build_changes import read_build_changes
from bot.promotion.gate.changes import ChangeReader, gated_owners
from bot.promotion.gate.checkrun import GateCheckRuns
from bot.promotion.gate.enforcement import GateEnforcement
from bot.promotion.gate.hold import hold_of
from bot.promotion.gate.merge_result import MergeResult
from bot.promotion.gate.pointers import read_pointer_changes
from bot.promotion.gate.policy_change import read_policy_change
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.opening.merger import merge_promotion
from bot.promotion.policies import BrokenPolicy, DeploymentRepo, IndexedRepo
from bot.render.diff import diff_lines
from bot.runtime.timer_jobs import GateRecheck

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)


@dataclass
class _Running:
    """The evaluation of one PR's gate under way, and its final verdict for those waiting."""

    verdict: asyncio.Future[Verdict | None]
    again: bool = False  # a caller came while it ran: run once more before answering
    failed: bool = False


@dataclass
class GateService:
    """The gate of every PR: the facts read by its parts (the changes, the reviews, the
    evidence, the hold), the verdict asked of `evaluate_gate`, the check run posted by `runs`.
    Coalesces evaluations: one running per PR, at most one more queued behind it, whose
    verdict every caller that came meanwhile receives."""

    ctx: Context
    changes: ChangeReader = field(init=False)
    approvals: Approvals = field(init=False, default_factory=Approvals)
    runs: GateCheckRuns = field(init=False)
    enforcement: GateEnforcement = field(init=False)

    _running: dict[tuple[str, int], _Running] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.changes = ChangeReader(self.ctx)
        self.runs = GateCheckRuns(self.ctx)
        self.enforcement = GateEnforcement(self.ctx)

    async def evaluate(self, gh: GitHubAPI, repo: IndexedRepo, number: int,
                       pr: dict[str, Any] | None = None) -> Verdict | None:
        """Evaluate and post the gate of PR ``number``; its verdict, None when it is not open.

        A call while the PR's gate is being evaluated asks that evaluation to run once more
        when it ends (what it read may be stale) and answers its final verdict: an opener
        that merges on the verdict never merges ahead of the check run."""
        key = (repo.full_name.lower(), number)
        while (running := self._running.get(key)) is not None:
            running.again = True
            answered = await asyncio.shield(running.verdict)
            if not running.failed:
                return answered
            pr = None  # it failed: this caller evaluates afresh
        running = _Running(asyncio.get_running_loop().create_future())
        self._running[key] = running
        final: tuple[Verdict, PullFacts] | None = None
        try:
            # across replicas too: one reading of a PR at a time, so that an older reading's
            # verdict (or merge) never lands after a newer one's
            async with self.ctx.locks.hold(f"gate:{repo.full_name}#{number}"):
                while True:
                    final = await self._evaluate_once(gh, repo, number, pr)
                    pr = None  # a re-run reads the PR afresh
                    if not running.again:
                        break
                    running.again = False
                if final is not None and isinstance(repo, DeploymentRepo):
                    # on the final verdict only: a hold, a dismissed approval or a failure
                    # mark that came while an earlier reading ran is in it
                    await self._auto_merge(gh, repo, final[1], final[0])
        except BaseException:
            running.failed = True
            raise
        finally:
            self._running.pop(key, None)
            running.verdict.set_result(final[0] if final is not None else None)
        return final[0] if final is not None else None

    async def post_own_commit(self, gh: GitHubAPI, repo: DeploymentRepo, number: int,
                              head_sha: str, base_sha: str, paths: Sequence[str]) -> bool:
        """The gate of a PR Conveyor has just opened into an ungated environment, before it
        merges it: where no gated environment's file is among ``paths`` and no gated render
        reads them at ``base_sha``, the verdict is "no gated environment changed", posted
        without reading the PR; otherwise the full evaluation. Whether the PR may be merged:
        not when its gate fails (the edit reaches a gated environment's render)."""
        policy = repo.policy
        if any(gated_owners(policy, path) for path in paths) or \
                await self._gated_builds_read(gh, repo, base_sha, paths):
            verdict = await self.evaluate(gh, repo, number)
            return verdict is not None and verdict.conclusion == "success"
        await self.runs.post(gh, repo.full_name, head_sha, NO_GATED_CHANGE, fresh=True)
        return True

    async def _gated_builds_read(self, gh: GitHubAPI, repo: DeploymentRepo, commit: str,
                                 paths: Sequence[str]) -> bool:
        builds = RepoBuilds(self.ctx, gh, repo.full_name, repo.default_branch)
        try:
            for render in await builds.environments(commit, repo.policy, gated_only=True):
                inputs = await builds.inputs(commit, render.target)
                if any(inputs.reads(path) for path in paths):
                    return True
        except TreeTruncated:
            return True  # cannot tell: the full evaluation judges it
        return False

    async def facts_of(self, gh: GitHubAPI, repo: IndexedRepo,
                       pr: dict[str, Any]) -> PullFacts:
        facts = PullFacts.from_api(pr)
        if facts.state == "open":
            facts.trusted = await trusted_pull(gh, repo.full_name, pr, self.ctx.bot_login)
        return facts

    async def _evaluate_once(self, gh: GitHubAPI, repo: IndexedRepo, number: int,
                             pr: dict[str, Any] | None) -> tuple[Verdict, PullFacts] | None:
        """Read, decide and post the gate once: the verdict and the facts it rests on."""
        if pr is None:
            pr = await gh.getitem(f"/repos/{repo.full_name}/pulls/{number}")
        facts = await self.facts_of(gh, repo, pr)
        if facts.state != "open":
            return None
        verdict = await self.verdict_for(gh, repo, facts)
        await self.runs.post(gh, repo.full_name, facts.head_sha, verdict)
        self.ctx.metrics.gate_verdicts.labels(verdict.conclusion or verdict.status).inc()
        if verdict.recheck_at is not None:
            self.ctx.scheduler.at(
                f"gate:{repo.full_name}#{number}", verdict.recheck_at,
                GateRecheck(repo.full_name, number, getattr(gh, "installation_id", None)))
        return verdict, facts

    async def queue_verdict(self, gh: GitHubAPI, repo: IndexedRepo, number: int,
                            base_sha: str, head_sha: str) -> Verdict | None:
        """The gate of PR ``number`` on its merge-queue commit ``head_sha``, built on
        ``base_sha``: the PR's verdict with its renders judged in the queue commit, which
        also holds the PRs queued ahead of it (their changes together with this one's are
        what merges). None when the PR is not open."""
        pr = await gh.getitem(f"/repos/{repo.full_name}/pulls/{number}")
        facts = await self.facts_of(gh, repo, pr)
        if facts.state != "open":
            return None
        return await self.verdict_for(gh, repo, facts, merge=MergeResult(base_sha, head_sha))

    async def verdict_for(self, gh: GitHubAPI, repo: IndexedRepo,
                          facts: PullFacts, merge: MergeResult | None = None) -> Verdict:
        """The gate's verdict on the pull request of ``facts``, without posting it; its
        renders judged in ``merge`` when given, else in what merging it makes now.

        Reads what the verdict rests on (the changed files, upstream evidence, reviews, hold
        and freeze) and leaves the decision to :func:`evaluate_gate`; a repository whose policy
        was never valid (a :class:`BrokenPolicy`) gets a failure.
        """
        if isinstance(repo, BrokenPolicy):
            return Verdict("completed", "failure", f"The policy {POLICY_PATH} is invalid",
                           (), None)
        policy = repo.policy
        gated = await self.changes.read(gh, repo, policy, facts)
        built = await read_build_changes(self.changes, gh, repo, facts, gated.files,
                                         gated.changes, merge)
        await read_pointer_changes(self.changes, gh, repo, facts, gated.files, gated.changes,
                                   built)
        changes, problems = gated.changes + built.changes, gated.problems
        policy_change = await read_policy_change(gh, repo, facts, gated.files)
        if not changes and not problems and not built.findings and policy_change is None:
            return NO_GATED_CHANGE
        policy_envs = policy_change.by_environment() if policy_change else {}
        finder = EvidenceFinder(gh, repo.full_name, repo.default_branch, policy, self.ctx.web_url,
                                own_login=self.ctx.bot_login, own_app_id=self.ctx.app_id)
        rollback = facts.trusted is not None and facts.trusted.rollback
        evidence: dict[str, list[Evidence]] = {}
        looked: set[tuple[str, str, str, str | None]] = set()
        for change in changes:
            key = (change.service, change.environment, change.new_digest or "",
                   change.canonical)
            if change.new_digest is None or change.resolution_error is not None or key in looked:
                continue
            looked.add(key)
            env = policy.environments[change.environment]
            found = await finder.for_digest(change.service, env, change.new_digest,
                                            image=change.image, version=change.new_tag)
            if rollback:
                found += await finder.history(change.service, change.environment,
                                              change.new_digest, image=change.image,
                                              version=change.new_tag)
            # Evidence is about one name: the same digest under another name is another image.
            evidence.setdefault(change.new_digest, []).extend(
                item if item.image is not None else replace(item, image=change.canonical)
                for item in found)
        envs = {change.environment for change in changes} | {
            p.environment for p in problems if p.environment in policy.environments} | {
            f.environment for f in built.findings if f.environment in policy.environments} | set(
            policy_envs)
        rules = {
            name: EnvironmentRules(
                name=name, after=policy.environments[name].after,
                evidence=policy.environments[name].evidence, soak=policy.environments[name].soak,
                # a change of an environment's rules needs at least one approver, whatever
                # its promotions need
                approvals=max(policy.environments[name].approvals, int(name in policy_envs)),
                allow_self_approval=policy.environments[name].allow_self_approval,
                ancestors=policy.ancestors(name),
            ) for name in envs
        }
        now = self.ctx.clock()
        held, hold_url = await hold_of(gh, repo.full_name, facts, self.ctx.bot_login)
        verdict = evaluate_gate(GateInput(
            changes=tuple(changes), rules=rules,
            evidence={digest: tuple(items) for digest, items in evidence.items()},
            rollback=rollback, problems=tuple(problems), evidence_notes=dict(finder.notes),
            merged_notes=dict(finder.chart_notes),
            failures={digest: tuple(marks) for digest, marks in finder.failures.items()},
            builds=tuple(built.findings),
            reviews=tuple(await self.approvals.reviews(gh, repo, policy, facts, envs,
                                                       wanted=bool(policy_envs))),
            head_sha=facts.head_sha, pr_author=facts.author,
            requester=facts.trusted.requester if facts.trusted else None,
            held=held, hold_url=hold_url,
            freeze_until={name: freeze_status(policy.environments[name].freeze, now)
                          for name in envs},
            now=now, policy_changed=policy_change is not None, policy_changes=policy_envs,
            policy_problem=policy_change.problem if policy_change else None,
            notes=await self.enforcement.notes(gh, repo, facts.head_sha),
        ))
        if built.diffs:
            verdict = replace(verdict, details="\n".join(
                line for title, diff in built.diffs for line in diff_lines(title, diff)))
        return verdict

    async def _auto_merge(self, gh: GitHubAPI, repo: DeploymentRepo,
                          facts: PullFacts, verdict: Verdict) -> None:
        trusted = facts.trusted
        if verdict.conclusion != "success":
            return
        if trusted is None:
            # A marker can be copied into any PR body: only PRs this app opened auto-merge.
            return
        env = repo.policy.environments.get(trusted.environment)
        if env is None or not env.auto_merge or not env.gated:
            return
        if not trusted.head:
            log.info("not auto-merging: someone pushed to the promotion PR",
                     extra={"pull": facts.number})
            return
        await merge_promotion(self.ctx, gh, repo.full_name, facts.number, facts.head_sha,
                              env.merge_method, environment=env.name, gated=True)
