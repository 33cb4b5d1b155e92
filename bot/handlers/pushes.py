"""Pushes to a deployment repository's default branch: policy changes and upstream evidence."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import (
    default_branch,
    deployment_repo,
    is_default_branch_push,
    pushed_paths,
)
from bot.names import POLICY_PATH
from bot.promotion.policies import DeploymentRepo
from bot.promotion.triggers.downstream import reevaluate_open_pulls
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()


@router.register("push")
async def on_push(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    if not is_default_branch_push(event):
        return
    if POLICY_PATH in pushed_paths(event) or not event.data.get("commits"):
        repo = await services.policies.refresh(gh, event.data["installation"]["id"],
                                               event.data["repository"]["full_name"],
                                          default_branch(event), force=True)
    else:
        repo = await deployment_repo(event, gh, services)
    if not isinstance(repo, DeploymentRepo):
        return
    await reevaluate_open_pulls(services.gates, gh, repo)
