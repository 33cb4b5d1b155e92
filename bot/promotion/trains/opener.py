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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot.domain.opening import (
    FileEdit,
    Opening,
    OpeningFacts,
    Reading,
    TrainSubject,
    decide_opening,
)
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.marker import (
    PromotionMarker,
    TrainMember,
    branch_prefix,
    train_branch_name,
    train_prefix,
)
from bot.domain.promotions.refusals import refusal_for_tags
from bot.domain.provenance import Provenance
from bot.domain.trains import train_digest
from bot.github.repos import add_labels, branch_head, get_file
from bot.github.snapshot import TreeTruncated
from bot.manifests import ManifestError, promote_image
from bot.promotion.authorship.receipts import receipt_unless_signed
from bot.promotion.authorship.trust import trusted_pull
from bot.promotion.builds import RepoBuilds, environment_target
from bot.promotion.effects import promotion_effect
from bot.promotion.opening.body import Change
from bot.promotion.opening.commits import commit_on
from bot.promotion.opening.opener import (
    LABEL,
    ROLLBACK_LABEL,
    Found,
    OpenResult,
    RepoOpener,
    env_label,
    open_pull,
)
from bot.promotion.opening.provenance import gather_provenance, with_compare
from bot.promotion.opening.superseding import close_superseded
from bot.promotion.trains.body import (
    Move,
    TrainTooLarge,
    train_body,
    train_commit_message,
    train_title,
)
from bot.render.targets import Target

log = logging.getLogger(__name__)

TRAIN_LABEL = "train"


@dataclass(frozen=True)
class TrainResult(OpenResult):
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

    @property
    def digest(self) -> str:
        """What names the train's branch: the digests it sets."""
        return train_digest(c.digest for c, _ in self.moves)


@dataclass(kw_only=True)
class _Train(Found):
    group: str
    candidates: Sequence[Candidate]
    plan: _Plan | None = None  # None until read, and when the files cannot be edited

    @property
    def moved(self) -> tuple[str, ...]:
        return tuple(c.service for c, _ in self.plan.moves) if self.plan else ()

    @property
    def left_out(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.plan.left_out) if self.plan else ()

    def declined(self, decision: Opening) -> TrainResult:
        return replace(TrainResult.declined(decision), moved=self.moved, left_out=self.left_out)


class TrainOpener(RepoOpener[_Train]):
    """Opens, adopts and supersedes release-train PRs in one deployment repository."""

    async def open(self, group: str, environment: str, candidates: Sequence[Candidate], *,
                   requester: str | None, rollback_note: str | None = None,
                   superseding: Sequence[str] = (), explicit: bool = True) -> TrainResult:
        """Open the train of ``candidates`` (one per service) into ``environment``.

        ``superseding``: the services whose single-service PRs into the environment this
        train closes (the whole group, for a forward train). Unless ``explicit`` (a command),
        a train whose pull request was closed without merging is not opened again.
        """
        rollback = rollback_note is not None
        facts = OpeningFacts(
            subject=TrainSubject(group), environment=environment, rollback=rollback,
            explicit=explicit,
            tag_refusals=tuple(refusal for c in candidates if (
                refusal := refusal_for_tags(self.policy, c.service, environment, c))))
        found = _Train(group=group, candidates=candidates)
        decided = decide_opening(facts)
        if isinstance(decided, Opening):  # on the policy alone, before any reading
            return found.declined(decided)
        full_name = self.repo.full_name
        async with self.ctx.locks.hold(full_name):
            decision, facts = await self._decide(facts, found)
            await self._label_adopted(decision, found, train_labels(environment, rollback))
            plan = found.plan
            if decision.kind != "open" or plan is None or facts.branch is None:
                return found.declined(decision)
            branch = facts.branch
            moves = [Move(c, change, await self._provenance(c, change)) for c, change in plan.moves]
            try:
                number, url, head_sha = await self._create(
                    group, environment, branch, plan, moves, requester, rollback_note)
            except TrainTooLarge as exc:
                return TrainResult("refused", str(exc), moved=found.moved,
                                   left_out=found.left_out)
            superseded: list[int] = []
            if not rollback:
                superseded = await self._supersede(group, environment, branch, number,
                                                   found.pulls, superseding)
            merged = await self._merge_ungated(self.policy.environments[environment], number,
                                               head_sha, plan.base_sha, plan.changed)
        self.ctx.metrics.promotions.labels(environment, "opened").inc()
        log.info("release train opened", extra={"repository": full_name, "pull": number,
                                                "group": group, "env": environment,
                                                "services": len(moves)})
        return TrainResult("opened", "opened", number, url, merged=merged, moved=found.moved,
                           left_out=found.left_out, superseded=tuple(superseded))

    async def _read_subject(self, reading: Reading, facts: OpeningFacts, found: _Train
                            ) -> OpeningFacts:
        if reading != "edit":
            raise ValueError(f"a train does not read {reading}")
        plan = await self._plan(found.candidates, facts.environment)
        if isinstance(plan, str):
            return replace(facts, edit=FileEdit(plan))
        refusal = await self._render(plan, facts.environment)
        if refusal is not None:
            return replace(facts, edit=FileEdit(refusal))
        found.plan = plan
        if not plan.moves:
            return replace(facts, edit=FileEdit(changed=False))
        return replace(facts, edit=FileEdit(), branch=train_branch_name(
            facts.environment, found.group, plan.digest, rollback=facts.rollback))

    async def _plan(self, candidates: Sequence[Candidate], environment: str) -> _Plan | str:
        """Every service's edit applied in turn to the files at the base commit, or why not."""
        full_name = self.repo.full_name
        plan = _Plan(await branch_head(self.gh, full_name, self.repo.default_branch))
        for candidate in candidates:
            path = self.policy.path_for(candidate.service, environment)
            if path not in plan.texts:
                current = await get_file(self.gh, full_name, path, plan.base_sha)
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

    async def _render(self, plan: _Plan, environment: str) -> str | None:
        """Each render the train edits (a Kustomize overlay, a chart), run with all its
        edits: the workloads whose image changes go to the PR body; a service whose move
        changes no workload's image refuses the train (it would change nothing in any
        cluster)."""
        if self.ctx.builder is None or not plan.moves:
            return None
        builds = RepoBuilds(self.ctx, self.gh, self.repo.full_name, self.repo.default_branch)
        try:
            index = await builds.index(plan.base_sha)
        except TreeTruncated:
            return None  # not rendered: the gate judges what it cannot render
        edited: dict[Target, tuple[str, dict[str, str]]] = {}
        targets: dict[str, Target] = {}
        for candidate, change in plan.moves:
            target = await builds.render_target(plan.base_sha, self.policy, environment,
                                                candidate.service) or environment_target(
                index, change.path, candidate.service, environment)
            if target is None:
                continue
            key = edited.setdefault(target, (candidate.service, {}))
            key[1][change.path] = plan.texts[change.path]
            targets[change.path] = target
        effects = {target: await promotion_effect(builds, plan.base_sha, self.policy,
                                                  environment, service, texts)
                   for target, (service, texts) in edited.items()}
        for position, (candidate, change) in enumerate(plan.moves):
            effect = effects.get(targets[change.path]) if change.path in targets else None
            if effect is None or effect.target is None:
                continue
            if effect.problem is None and not any(candidate.digest in c.new
                                                  for c in effect.changes):
                image = self.policy.services[candidate.service].image
                return f"{candidate.service}: {effect.refusal(image)}"
            plan.moves[position] = (candidate, replace(change, effect=effect))
        return None

    async def _provenance(self, candidate: Candidate, change: Change) -> Provenance:
        provenance = await gather_provenance(
            self.gh, self.ctx, candidate, self.policy.services[candidate.service].signer_workflow)
        return await with_compare(self.gh, provenance, candidate, change.old_tag,
                                  self.ctx.web_url)

    async def _create(self, group: str, environment: str, branch: str, plan: _Plan,
                      moves: list[Move], requester: str | None, rollback_note: str | None
                      ) -> tuple[int, str, str]:
        full_name = self.repo.full_name
        env = self.policy.environments[environment]
        rollback = rollback_note is not None
        marker = PromotionMarker(
            service=group, environment=environment, digest=plan.digest, tag=None,
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
        pull = await open_pull(
            self.gh, full_name, branch=branch, base=self.repo.default_branch, body=body,
            title=train_title(group, environment, len(moves), rollback=rollback),
            bot_login=self.ctx.bot_login)
        await add_labels(self.gh, full_name, int(pull["number"]),
                         train_labels(environment, rollback))
        return int(pull["number"]), str(pull["html_url"]), head_sha

    async def _commit(self, branch: str, plan: _Plan, message: str) -> str:
        """One tree (the new texts inline: GitHub writes their blobs), one commit, one ref."""
        full_name = self.repo.full_name
        commit = await commit_on(self.gh, full_name, plan.base_sha,
                                 {path: plan.texts[path] for path in plan.changed}, message)
        sha = str(commit["sha"])
        await self._create_branch(branch, sha)
        await receipt_unless_signed(self.ctx, self.gh, full_name, commit,
                                    message.split("\n", 1)[0] + ".")
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
            if ref == branch or not ref.startswith((trains, *singles)):
                continue
            # what the PR is comes from Conveyor's commit on it, never from its body
            trusted = await trusted_pull(self.gh, self.repo.full_name, pr, self.ctx.bot_login)
            if trusted is None or trusted.rollback:
                continue
            older_train = ref.startswith(trains) and trusted.train == group
            single = ref.startswith(singles) and not trusted.is_train
            if older_train or single:
                await close_superseded(self.ctx, self.gh, self.repo.full_name, pr, number)
                closed.append(int(pr["number"]))
        return closed



def train_labels(environment: str, rollback: bool) -> list[str]:
    return [LABEL, env_label(environment), TRAIN_LABEL] + ([ROLLBACK_LABEL] if rollback else [])
