"""Slash commands in comments of deployment repositories.

Only new comments run commands: an edited comment is never re-run (editing a typo must not
open a second promotion). Comments by bots — Conveyor's own replies included — are ignored,
so the bot can never answer itself.
"""

from __future__ import annotations

import logging
from typing import Any

import gidgethub
from gidgethub import routing, sansio

from bot.domain.commands.parse import parse_commands
from bot.github.client import ConveyorGitHubAPI
from bot.github.repos import WRITE_PERMISSIONS, comment, is_bot, permission_of
from bot.handlers.events import indexed_repo
from bot.promotion.commands.command_run import Invocation
from bot.promotion.commands.dispatch import finish, run_commands
from bot.promotion.commands.replies import (
    already_answered,
    permission_refusal,
    permission_unknown,
    policy_refusal,
)
from bot.promotion.policies import BrokenPolicy, DeploymentRepo
from bot.services import Services

log = logging.getLogger(__name__)
router = routing.Router()


def from_a_bot(user: dict[str, Any] | None, bot_login: str) -> bool:
    login = str((user or {}).get("login", ""))
    return is_bot(user) or (bool(bot_login) and login.lower() == bot_login.lower())


@router.register("issue_comment", action="created")
async def on_comment_created(event: sansio.Event, gh: ConveyorGitHubAPI, services: Services
                             ) -> None:
    posted: dict[str, Any] = event.data["comment"]
    user = posted.get("user")
    body = str(posted.get("body") or "")
    if from_a_bot(user, services.ctx.bot_login) or "/" not in body:
        return
    repo = await indexed_repo(event, gh, services)
    if repo is None:
        return  # not a deployment repository
    if isinstance(repo, DeploymentRepo):
        parsed = parse_commands(body, services=list(repo.policy.services),
                                environments=list(repo.policy.environments),
                                groups=list(repo.policy.groups))
    else:
        parsed = parse_commands(body, services=[], environments=[])
    if not parsed:
        return
    issue = event.data["issue"]
    number = int(issue["number"])
    commenter = str((user or {}).get("login", ""))
    full_name = repo.full_name
    if await already_answered(gh, full_name, number, posted):
        log.info("command comment already answered", extra={"repository": full_name,
                                                             "comment": posted["id"]})
        return
    try:
        await gh.post(f"/repos/{full_name}/issues/comments/{posted['id']}/reactions",
                      data={"content": "eyes"})
    except gidgethub.GitHubException as exc:  # the reply still says what happened
        log.warning("could not react to the comment", extra={"repository": full_name,
                                                             "error": str(exc)})
    try:
        permission = await permission_of(gh, full_name, commenter)
    except gidgethub.GitHubException as exc:
        log.warning("could not read the commenter's permission",
                    extra={"repository": full_name, "user": commenter, "error": str(exc)})
        await comment(gh, full_name, number, permission_unknown(int(posted["id"]), commenter))
        return
    if permission not in WRITE_PERMISSIONS:
        log.info("command refused: not enough permission",
                 extra={"repository": full_name, "user": commenter, "permission": permission})
        await comment(gh, full_name, number,
                      permission_refusal(int(posted["id"]), commenter, full_name, permission))
        return
    if isinstance(repo, BrokenPolicy):
        await comment(gh, full_name, number, policy_refusal(int(posted["id"]), repo))
        return
    where = Invocation(repo=repo, number=number, is_pull="pull_request" in issue,
                       commenter=commenter, comment_id=int(posted["id"]))
    log.info("running commands", extra={"repository": full_name, "number": number,
                                        "user": commenter, "commands": len(parsed)})
    reply = await run_commands(services, gh, where, parsed)
    await finish(services, gh, where, reply)
