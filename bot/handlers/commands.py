"""Slash commands in comments of deployment repositories.

Only new comments run commands: an edited comment is never re-run (editing a typo must not
open a second promotion). Comments by bots — Conveyor's own replies included — are ignored,
so the bot can never answer itself.

The reply is the acknowledgement: a command answered by the job that received it gets no 👀
reaction (one write less of the 500 an hour GitHub allows an installation). Only a job that
fails before its reply reacts, so that the person sees the command was received while the job
is tried again, and the retry replies.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import gidgethub
from gidgethub import sansio

from bot.domain.commands.parse import Command, CommandError, parse_commands
from bot.github.client import ConveyorGitHubAPI
from bot.github.repos import WRITE_PERMISSIONS, comment, is_bot, permission_of
from bot.handlers.events import indexed_repo
from bot.handlers.routes import Declared
from bot.promotion.commands.command_run import CommandCapabilities, Invocation
from bot.promotion.commands.dispatch import reevaluate, run_commands
from bot.promotion.commands.replies import (
    Reply,
    already_answered,
    permission_refusal,
    permission_unknown,
    policy_refusal,
)
from bot.promotion.policies import BrokenPolicy, DeploymentRepo, IndexedRepo, PolicyIndex

log = logging.getLogger(__name__)


def from_a_bot(user: dict[str, Any] | None, bot_login: str) -> bool:
    login = str((user or {}).get("login", ""))
    return is_bot(user) or (bool(bot_login) and login.lower() == bot_login.lower())


@dataclass(frozen=True)
class Comments:
    policies: PolicyIndex
    commands: CommandCapabilities

    async def on_comment_created(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        posted: dict[str, Any] = event.data["comment"]
        user = posted.get("user")
        body = str(posted.get("body") or "")
        if from_a_bot(user, self.commands.ctx.bot_login) or "/" not in body:
            return
        repo = await indexed_repo(event, gh, self.policies)
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
        full_name = repo.full_name
        if await already_answered(gh, full_name, int(event.data["issue"]["number"]), posted,
                                  self.commands.ctx.bot_login):
            log.info("command comment already answered", extra={"repository": full_name,
                                                                 "comment": posted["id"]})
            return
        try:
            answered = await _answer(self.commands, gh, repo, event.data["issue"], posted,
                                     parsed)
        except Exception:
            await _received(gh, full_name, posted)
            raise
        if answered is not None:
            await reevaluate(self.commands.gates, gh, *answered)


DECLARED = (
    Declared("commands.comment", Comments.on_comment_created,
             on=(("issue_comment", "created"),)),
)


async def _received(gh: ConveyorGitHubAPI, full_name: str, posted: dict[str, Any]) -> None:
    """👀 on a command comment whose job failed before replying (the retry replies)."""
    try:
        await gh.post(f"/repos/{full_name}/issues/comments/{posted['id']}/reactions",
                      data={"content": "eyes"})
    except gidgethub.GitHubException as exc:  # the job's own failure is what gets logged
        log.warning("could not react to the comment", extra={"repository": full_name,
                                                             "error": str(exc)})


async def _answer(commands: CommandCapabilities, gh: ConveyorGitHubAPI, repo: IndexedRepo,
                  issue: dict[str, Any], posted: dict[str, Any],
                  parsed: list[Command | CommandError]) -> tuple[Invocation, Reply] | None:
    """Check the commenter's permission, run the commands and reply; what ran and its reply,
    or None when nothing ran."""
    full_name = repo.full_name
    number = int(issue["number"])
    commenter = str((posted.get("user") or {}).get("login", ""))
    try:
        permission = await permission_of(gh, full_name, commenter)
    except gidgethub.GitHubException as exc:
        log.warning("could not read the commenter's permission",
                    extra={"repository": full_name, "user": commenter, "error": str(exc)})
        await comment(gh, full_name, number, permission_unknown(int(posted["id"]), commenter))
        return None
    if permission not in WRITE_PERMISSIONS:
        log.info("command refused: not enough permission",
                 extra={"repository": full_name, "user": commenter, "permission": permission})
        await comment(gh, full_name, number,
                      permission_refusal(int(posted["id"]), commenter, full_name, permission))
        return None
    if isinstance(repo, BrokenPolicy):
        await comment(gh, full_name, number, policy_refusal(int(posted["id"]), repo))
        return None
    where = Invocation(repo=repo, number=number, is_pull="pull_request" in issue,
                       commenter=commenter, comment_id=int(posted["id"]))
    log.info("running commands", extra={"repository": full_name, "number": number,
                                        "user": commenter, "commands": len(parsed)})
    reply = await run_commands(commands, gh, where, parsed)
    await reply.post(gh, full_name, number)
    return where, reply
