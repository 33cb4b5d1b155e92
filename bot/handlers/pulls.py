"""Pull requests of deployment repositories: the gate, and what a merged promotion starts."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from gidgethub import sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import indexed_repo
from bot.handlers.routes import Declared
from bot.promotion.authorship.trust import trusted_promotion
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.gate.hold import keep_hold
from bot.promotion.policies import DeploymentRepo, PolicyIndex
from bot.promotion.trains.flows import promote_train_downstream
from bot.promotion.triggers.downstream import (
    RERUN_AT_ONCE,
    promote_downstream,
    reevaluate_open_pulls,
)
from bot.promotion.triggers.flows import Promoter

log = logging.getLogger(__name__)

_MERGE_QUEUE_PR = re.compile(r"/pr-(\d+)-")


@dataclass(frozen=True)
class Pulls:
    policies: PolicyIndex
    gates: GateService
    promoter: Promoter

    async def on_pull_changed(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        """A change to the PR or its reviews: re-evaluate its gate.

        The payload only says which PR: a delivery may be late or replayed, so the evaluation
        reads the PR's labels, body and head from GitHub as they are now."""
        repo = await indexed_repo(event, gh, self.policies)
        if repo is None:
            return
        number = int(event.data["pull_request"]["number"])
        if event.data.get("action") == "unlabeled":
            await keep_hold(self.promoter.ctx, gh, repo.full_name, number, event.data)
        await self.gates.evaluate(gh, repo, number)

    async def on_pull_closed(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        pr = event.data["pull_request"]
        if not pr.get("merged"):
            return
        repo = await indexed_repo(event, gh, self.policies)
        if repo is None:
            return
        if isinstance(repo, DeploymentRepo):  # a broken policy promotes nothing
            await self._promote_after(gh, repo, pr)
        await reevaluate_open_pulls(self.gates, gh, repo, newest=RERUN_AT_ONCE)

    async def _promote_after(self, gh: ConveyorGitHubAPI, repo: DeploymentRepo,
                             pr: dict[str, Any]) -> None:
        """What a merged promotion or train opens downstream, from what Conveyor's own commit
        on it says (an edited body changes nothing)."""
        ctx = self.promoter.ctx
        found = await trusted_promotion(gh, repo.full_name, pr, ctx.bot_login)
        if found is None:
            return
        marker, commit = found
        if marker.is_rollback:
            return
        if marker.is_train:
            await promote_train_downstream(ctx, gh, repo, commit, merge=self.promoter.merge)
        else:
            await promote_downstream(self.promoter, gh, repo, marker, int(pr["number"]))

    async def on_check_rerun(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        """The checks UI's "Re-run": re-evaluate the gate of the PRs of that commit."""
        repo = await indexed_repo(event, gh, self.policies)
        if repo is None:
            return
        check = event.data.get("check_run") or event.data.get("check_suite") or {}
        for pr in check.get("pull_requests") or []:
            await self.gates.evaluate(gh, repo, int(pr["number"]))

    async def on_merge_group(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        """Post the gate on the merge-queue commit: the queued PR's verdict, its renders
        judged in that commit (the PRs queued ahead of it are in it too)."""
        repo = await indexed_repo(event, gh, self.policies)
        if repo is None:
            return
        group = event.data["merge_group"]
        match = _MERGE_QUEUE_PR.search(group.get("head_ref", ""))
        if match is None:
            return
        verdict = await self.gates.queue_verdict(gh, repo, int(match.group(1)),
                                                 group["base_sha"], group["head_sha"])
        if verdict is not None:
            await self.gates.runs.post(gh, repo.full_name, group["head_sha"], verdict)


DECLARED = (
    Declared("pulls.check_rerun", Pulls.on_check_rerun,
             on=(("check_run", "rerequested"), ("check_run", "requested_action"),
                 ("check_suite", "rerequested"))),
    Declared("pulls.merge_group", Pulls.on_merge_group,
             on=(("merge_group", "checks_requested"),)),
    Declared("pulls.gate", Pulls.on_pull_changed,
             on=tuple(("pull_request", action) for action in (
                 "opened", "synchronize", "reopened", "edited", "labeled", "unlabeled"))
             + tuple(("pull_request_review", action) for action in (
                 "submitted", "edited", "dismissed"))),
    Declared("pulls.closed", Pulls.on_pull_closed, on=(("pull_request", "closed"),)),
)
