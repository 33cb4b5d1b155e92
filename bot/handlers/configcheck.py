"""`conveyor/config-check` on every PR of a deployment repository and every default-branch push.

A PR Conveyor opens into an ungated `auto_merge` environment gets none here: it is merged as
it is opened, and the push of its merge gets one (where GitHub refuses that merge, its opener
posts the PR's).
"""

from __future__ import annotations

from dataclasses import dataclass

from gidgethub import sansio

from bot.domain.policy import Policy
from bot.github.client import ConveyorGitHubAPI
from bot.handlers import pushes
from bot.handlers.events import indexed_repo, is_default_branch_push, pushed_paths
from bot.handlers.routes import Declared
from bot.promotion.configcheck import run_config_check
from bot.promotion.opening.merger import merged_as_opened
from bot.promotion.policies import DeploymentRepo, IndexedRepo, PolicyIndex
from bot.runtime.context import Context


def _policy_of(repo: IndexedRepo) -> Policy | None:
    """The policy the check reads images against; none while the policy was never valid (the
    files are still checked on their own)."""
    return repo.policy if isinstance(repo, DeploymentRepo) else None


@dataclass(frozen=True)
class ConfigChecks:
    ctx: Context
    policies: PolicyIndex

    async def on_pull_request(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        repo = await indexed_repo(event, gh, self.policies)
        if repo is None:
            return
        pr = event.data["pull_request"]
        if event.data.get("action") == "opened" and isinstance(repo, DeploymentRepo) \
                and merged_as_opened(repo.policy, pr, self.ctx.bot_login):
            return  # the push of its merge is checked (or, when the merge waits, its opener)
        paths = [f["filename"] async for f in gh.getiter(
            f"/repos/{repo.full_name}/pulls/{pr['number']}/files?per_page=100")]
        await run_config_check(self.ctx, gh, repo.full_name, _policy_of(repo),
                               pr["head"]["sha"], paths, repo.default_branch)

    async def on_push(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        if not is_default_branch_push(event):
            return
        repo = await indexed_repo(event, gh, self.policies)
        if repo is None:
            return
        paths = sorted(pushed_paths(event))
        if paths:
            await run_config_check(self.ctx, gh, repo.full_name, _policy_of(repo),
                                   event.data["after"], paths, repo.default_branch)


DECLARED = (
    Declared("configcheck.pull", ConfigChecks.on_pull_request,
             on=(("pull_request", "opened"), ("pull_request", "synchronize"),
                 ("pull_request", "reopened"))),
    # a push that changes the policy is checked with the policy it makes
    Declared("configcheck.push", ConfigChecks.on_push, on=(("push", None),),
             after=(pushes.POLICY,)),
)
