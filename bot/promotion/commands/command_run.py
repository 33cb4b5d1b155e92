"""One command comment being run: where it was written and by whom, and what its commands
share (the reply, the PR it is on, earlier promotions' markers, the candidate of a digest)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gidgethub.abc import GitHubAPI

from bot.domain.attestation import SignerWorkflow
from bot.domain.policy import Policy
from bot.domain.promotions.candidate import Candidate, Trigger
from bot.domain.promotions.marker import PromotionMarker, branch_name
from bot.domain.tags import version_from_tag
from bot.github.repos import commit_for_ref
from bot.promotion.authorship.trust import trusted_marker
from bot.promotion.commands.replies import Reply
from bot.promotion.dashboard.status import StatusSources
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.gate.hold import HOLD_LABEL
from bot.promotion.opening.attestations import check_attestation
from bot.promotion.opening.opener import Opener, find_pull_for_branch
from bot.promotion.policies import DeploymentRepo
from bot.promotion.trains.opener import TrainOpener
from bot.promotion.triggers.flows import Promoter, find_release
from bot.text import short_digest

if TYPE_CHECKING:
    from bot.runtime.context import Context


@dataclass(frozen=True)
class Invocation:
    """Where a command comment was written, and by whom."""

    repo: DeploymentRepo
    number: int
    is_pull: bool
    commenter: str
    comment_id: int

    @property
    def policy(self) -> Policy:
        return self.repo.policy


@dataclass(frozen=True)
class CommandCapabilities:
    """What commands run with: the infrastructure, the gate, the promoter (how promotions
    open and merge) and what runs where."""

    ctx: Context
    gates: GateService
    promoter: Promoter
    status: StatusSources


class CommandRun:
    """One command comment being run: where it was written, the reply it gets, and what its
    commands read once and share (the PR it is on, earlier promotions' markers, the hold)."""

    def __init__(self, capabilities: CommandCapabilities, gh: GitHubAPI, where: Invocation,
                 reply: Reply) -> None:
        self.capabilities = capabilities
        self.ctx = capabilities.ctx
        self.gh = gh
        self.where = where
        self.reply = reply
        self._pr: dict[str, Any] | None = None
        self._markers: dict[tuple[str, str], PromotionMarker | None] = {}
        self.is_held: bool | None = None  # known once read, then as the commands change it

    @property
    def repo(self) -> str:
        return self.where.repo.full_name

    def opener(self) -> Opener:
        """The promotion opener of the repository, merging as the app's promoter does."""
        return Opener(self.ctx, self.gh, self.where.repo, self.capabilities.promoter.merge)

    def train_opener(self) -> TrainOpener:
        """The train opener of the repository, merging as the app's promoter does."""
        return TrainOpener(self.ctx, self.gh, self.where.repo, self.capabilities.promoter.merge)

    async def pull(self) -> dict[str, Any]:
        if self._pr is None:
            self._pr = dict(await self.gh.getitem(f"/repos/{self.repo}/pulls/{self.where.number}"))
        return self._pr

    def not_a_pull(self, command: str, what: str) -> str | None:
        if self.where.is_pull:
            return None
        return (f"❌ `/{command}` works on a pull request {what}; "
                f"#{self.where.number} is an issue.")

    async def held(self) -> bool:
        if self.is_held is None:
            pr = await self.pull()
            self.is_held = any(label.get("name") == HOLD_LABEL
                                for label in pr.get("labels") or [])
        return self.is_held

    async def marker_for(self, service: str, digest: str) -> PromotionMarker | None:
        """The marker of an earlier promotion PR of this digest (any environment)."""
        if (service, digest) not in self._markers:
            self._markers[service, digest] = await self._find_marker(service, digest)
        return self._markers[service, digest]

    async def _find_marker(self, service: str, digest: str) -> PromotionMarker | None:
        """Provenance from an earlier promotion PR of this digest that Conveyor opened."""
        for environment in self.where.policy.environments:
            pr = await find_pull_for_branch(self.gh, self.repo,
                                            branch_name(environment, service, digest))
            trusted = await trusted_marker(self.gh, self.repo, pr, self.ctx.bot_login) \
                if pr else None
            if trusted is not None and trusted[0].digest == digest:
                return trusted[0]
        return None

    def signer(self, candidate: Candidate) -> SignerWorkflow | None:
        """The policy's `signer_workflow` of the candidate's service."""
        return self.where.policy.services[candidate.service].signer_workflow

    async def candidate(self, service: str, digest: str, tag: str | None, trigger: Trigger
                         ) -> Candidate:
        """What is known about a digest: an earlier promotion's marker, the release whose tag
        names it, the commit its attestation or its image labels name."""
        policy = self.where.policy
        source = policy.services[service].source
        image = policy.services[service].image
        known = await self.marker_for(service, digest)
        source_sha = known.source_sha if known else None
        release_tag = known.release_tag if known else None
        release_url = None
        if tag and release_tag is None:
            release = await find_release(self.gh, source, service, tag)
            if release is not None:
                release_tag = str(release["tag_name"])
                release_url = release.get("html_url")
        if release_tag and source_sha is None:
            commit = await commit_for_ref(self.gh, source, release_tag)
            source_sha = str(commit["sha"]) if commit else None
        if source_sha is None:
            attested = await check_attestation(
                self.gh, self.ctx.attestations, web_url=self.ctx.web_url, source=source,
                digest=digest, signer=policy.services[service].signer_workflow)
            source_sha = attested.build.commit if attested.build else None
        if source_sha is None:
            labelled = await self.ctx.images.provenance(image, digest)
            if labelled.source_repo and labelled.source_repo.lower() == source.lower():
                source_sha = labelled.revision
        named = release_tag or tag
        version = version_from_tag(named) if named else short_digest(digest)
        return Candidate(
            service=service, image=image, digest=digest, tag=tag, version=version,
            source_repo=source, trigger=trigger, source_sha=source_sha,
            release_tag=release_tag, release_url=release_url,
            requester=self.where.commenter,
        )
