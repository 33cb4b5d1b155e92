"""Pull requests of deployment repositories: the gate, and what a merged promotion starts."""

from __future__ import annotations

import logging
import re
from typing import Any

from gidgethub import routing, sansio

from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import indexed_repo
from bot.promotion.authorship.trust import trusted_promotion
from bot.promotion.gate.hold import keep_hold
from bot.promotion.policies import DeploymentRepo
from bot.promotion.trains.flows import promote_train_downstream
from bot.promotion.triggers.downstream import promote_downstream, reevaluate_open_pulls
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()

_MERGE_QUEUE_PR = re.compile(r"/pr-(\d+)-")


@router.register("pull_request", action="opened")
@router.register("pull_request", action="synchronize")
@router.register("pull_request", action="reopened")
@router.register("pull_request", action="edited")
@router.register("pull_request", action="labeled")
@router.register("pull_request", action="unlabeled")
@router.register("pull_request_review", action="submitted")
@router.register("pull_request_review", action="edited")
@router.register("pull_request_review", action="dismissed")
async def on_pull_changed(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    """A change to the PR or its reviews: re-evaluate its gate.

    The payload only says which PR: a delivery may be late or replayed, so the evaluation reads
    the PR's labels, body and head from GitHub as they are now."""
    repo = await indexed_repo(event, gh, services)
    if repo is None:
        return
    number = int(event.data["pull_request"]["number"])
    if event.data.get("action") == "unlabeled":
        await keep_hold(services.ctx, gh, repo.full_name, number, event.data)
    await services.gates.evaluate(gh, repo, number)


@router.register("pull_request", action="closed")
async def on_pull_closed(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    pr = event.data["pull_request"]
    if not pr.get("merged"):
        return
    repo = await indexed_repo(event, gh, services)
    if repo is None:
        return
    if isinstance(repo, DeploymentRepo):  # a broken policy promotes nothing
        await _promote_after(services, gh, repo, pr)
    await reevaluate_open_pulls(services.gates, gh, repo)


async def _promote_after(services: Services, gh: ConveyorGitHubAPI, repo: DeploymentRepo,
                         pr: dict[str, Any]) -> None:
    """What a merged promotion or train opens downstream, from what Conveyor's own commit on
    it says (an edited body changes nothing)."""
    ctx = services.ctx
    found = await trusted_promotion(gh, repo.full_name, pr, ctx.bot_login)
    if found is None:
        return
    marker, commit = found
    if marker.kind == "promotion":
        await promote_downstream(services.promoter, gh, repo, marker, int(pr["number"]))
    elif marker.kind == "train":
        await promote_train_downstream(ctx, gh, repo, commit, merge=services.promoter.merge)


@router.register("check_run", action="rerequested")
@router.register("check_run", action="requested_action")
@router.register("check_suite", action="rerequested")
async def on_check_rerun(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    """The checks UI's "Re-run": re-evaluate the gate of the PRs of that commit."""
    repo = await indexed_repo(event, gh, services)
    if repo is None:
        return
    check = event.data.get("check_run") or event.data.get("check_suite") or {}
    for pr in check.get("pull_requests") or []:
        await services.gates.evaluate(gh, repo, int(pr["number"]))


@router.register("merge_group", action="checks_requested")
async def on_merge_group(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services) -> None:
    """Post the gate on the merge-queue commit, with the verdict of the queued PR."""
    repo = await indexed_repo(event, gh, services)
    if repo is None:
        return
    group = event.data["merge_group"]
    match = _MERGE_QUEUE_PR.search(group.get("head_ref", ""))
    if match is None:
        return
    verdict = await services.gates.evaluate(gh, repo, int(match.group(1)))
    if verdict is not None:
        await services.gates.runs.post(gh, repo.full_name, group["head_sha"], verdict)
