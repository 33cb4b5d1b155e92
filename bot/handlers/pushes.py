"""Pushes to a deployment repository's default branch: policy changes and upstream evidence."""

from __future__ import annotations

import logging

from gidgethub import routing, sansio

from ..context import Context
from ..github.client import ConveyorGitHubAPI
from ..names import POLICY_PATH
from ..promotion.downstream import reevaluate_open_pulls

log = logging.getLogger(__name__)
router = routing.Router()


@router.register("push")
async def on_push(event: sansio.Event, gh: ConveyorGitHubAPI, ctx: Context) -> None:
    repository = event.data["repository"]
    default_branch = repository.get("default_branch") or repository.get("master_branch")
    if event.data.get("ref") != f"refs/heads/{default_branch}" or event.data.get("deleted"):
        return
    installation_id = event.data["installation"]["id"]
    touched = {path for commit in event.data.get("commits") or []
               for key in ("added", "modified", "removed") for path in commit.get(key) or []}
    if POLICY_PATH in touched or not event.data.get("commits"):
        repo = await ctx.policies.refresh(gh, installation_id, repository["full_name"],
                                          default_branch, force=True)
    else:
        repo = await ctx.policies.get(gh, installation_id, repository["full_name"],
                                      default_branch)
    if repo is None or repo.policy is None:
        return
    await reevaluate_open_pulls(ctx, gh, repo)
