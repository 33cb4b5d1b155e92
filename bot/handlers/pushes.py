"""Pushes to a deployment repository's default branch: policy changes and upstream evidence."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from gidgethub import sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import (
    default_branch,
    deployment_repo,
    is_default_branch_push,
    pushed_paths,
)
from bot.handlers.routes import Declared
from bot.names import POLICY_PATH
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.policies import DeploymentRepo, PolicyIndex
from bot.promotion.triggers.downstream import RERUN_AT_ONCE, reevaluate_open_pulls

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pushes:
    policies: PolicyIndex
    gates: GateService

    async def on_push(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        """A push that changes the policy re-reads it (before the config check reads it) and
        re-runs every open gate; any other push re-runs the newest ones (the resync, all)."""
        if not is_default_branch_push(event):
            return
        # a push that lists no commits (the ref moved back, say) may have changed it too
        policy_may_change = POLICY_PATH in pushed_paths(event) or not event.data.get("commits")
        if policy_may_change:
            repo = await self.policies.refresh(gh, event.data["installation"]["id"],
                                               event.data["repository"]["full_name"],
                                               default_branch(event), force=True)
        else:
            repo = await deployment_repo(event, gh, self.policies)
        if not isinstance(repo, DeploymentRepo):
            return
        await reevaluate_open_pulls(self.gates, gh, repo,
                                    newest=None if policy_may_change else RERUN_AT_ONCE)


POLICY = "pushes.policy"
DECLARED = (Declared(POLICY, Pushes.on_push, on=(("push", None),)),)
