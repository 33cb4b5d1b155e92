"""Running slash commands: each command to its family's module, every outcome into one reply.

The handler decides whether a comment is for Conveyor at all (not a bot, a deployment
repository, a command line, a user who may run commands); this module runs the parsed
commands in order (`/promote` in `promote.py`, `/rollback` in `rollback.py`,
`/hold`, `/unhold` and `/recheck` in `gate.py`) and answers with one comment listing
every outcome (`replies.py`). A command that fails
says so in the reply — it never stops the commands after it and never goes unanswered.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.domain.commands.parse import (
    Command,
    CommandError,
    Help,
    Hold,
    Promote,
    PromoteExplicit,
    PromoteTrain,
    PromoteUpstream,
    Recheck,
    Rollback,
    RollbackTrain,
    Status,
    Unhold,
)
from bot.names import POLICY_PATH
from bot.promotion.commands.command_run import CommandCapabilities, CommandRun, Invocation
from bot.promotion.commands.gate import hold, recheck, unhold
from bot.promotion.commands.promote import (
    promote_explicit,
    promote_from_upstreams,
    promote_same_digest,
    promote_train,
)
from bot.promotion.commands.replies import Reply
from bot.promotion.commands.rollback import rollback, rollback_train
from bot.promotion.dashboard.graph_chart import flowchart, policy_edges
from bot.promotion.dashboard.status import attestation_lines, render_status
from bot.promotion.gate.gatekeeper import GateService
from bot.registry.errors import RegistryError
from bot.text import error_text, escape_markdown

log = logging.getLogger(__name__)


async def run_commands(capabilities: CommandCapabilities, gh: GitHubAPI, where: Invocation,
                       parsed: Sequence[Command | CommandError]) -> Reply:
    """Run every command in order; return the reply (posted by the caller)."""
    run = CommandRun(capabilities, gh, where, Reply(where.comment_id))
    if where.repo.issues:
        run.reply.add(None, f"⚠️ `{POLICY_PATH}` on `{where.repo.default_branch}` is "
                            "invalid; the last valid policy is used until it is fixed.")
    for command in parsed:
        await _run(run, command)
    return run.reply


async def reevaluate(gates: GateService, gh: GitHubAPI, where: Invocation, reply: Reply
                     ) -> None:
    """Once the reply is posted, re-evaluate what the commands changed (a hold's reason is
    read from the reply, so the gate runs after it exists)."""
    if reply.reevaluate and where.is_pull:
        await gates.evaluate(gh, where.repo, where.number)


async def _run(run: CommandRun, command: Command | CommandError) -> None:
    if isinstance(command, CommandError):
        run.reply.add(command, f"❌ {escape_markdown(command.message)}")
        run.reply.with_help = True
        return
    try:
        text = await _dispatch(run, command)
    except RegistryError as exc:
        log.warning("command failed: %s", exc.message,
                    extra={"repository": run.repo, "number": run.where.number,
                           "command": command.name})
        text = (f"❌ {escape_markdown(exc.message)}. Comment the command again once the "
                "registry answers.")
    except gidgethub.GitHubException as exc:
        log.exception("command failed", extra={"repository": run.repo,
                                               "number": run.where.number,
                                               "command": command.name})
        text = (f"⚠️ failed: GitHub answered {_github_error(exc)}, and the command stopped "
                "there. Comment it again to retry.")
    except Exception as exc:
        log.exception("command failed", extra={"repository": run.repo,
                                               "number": run.where.number,
                                               "command": command.name})
        text = (f"⚠️ failed with an internal error ({type(exc).__name__}); it is in "
                "Conveyor's logs. Comment the command again to retry.")
    run.reply.add(command, text)


async def _dispatch(run: CommandRun, command: Command) -> str:
    if isinstance(command, Promote):
        return await promote_same_digest(run, command)
    if isinstance(command, PromoteExplicit):
        return await promote_explicit(run, command)
    if isinstance(command, PromoteTrain):
        return await promote_train(run, command)
    if isinstance(command, PromoteUpstream):
        return await promote_from_upstreams(run, command.environment, command.service)
    if isinstance(command, Rollback):
        return await rollback(run, command)
    if isinstance(command, RollbackTrain):
        return await rollback_train(run, command)
    if isinstance(command, Hold):
        return await hold(run, command)
    if isinstance(command, Unhold):
        return await unhold(run)
    if isinstance(command, Recheck):
        return await recheck(run)
    if isinstance(command, Status):
        return await show_status(run, command)
    if isinstance(command, Help):
        run.reply.with_help = True
        return "📖 Conveyor's commands are listed below."
    raise TypeError(f"no executor for /{command.name}")


async def show_status(run: CommandRun, command: Status) -> str:
    rows = await run.capabilities.status.collect(run.gh, run.where.repo)
    if command.group is not None:
        members = run.where.policy.groups[command.group].services
        rows = [row for row in rows if row.service in members]
    table = render_status(rows, command.service)
    enforcement = await run.capabilities.gates.enforcement.of(run.gh, run.where.repo)
    warnings = "".join([*(f"> ⚠️ {escape_markdown(finding)}\n\n"
                          for finding in enforcement.findings),
                        *(f"> ℹ️ {escape_markdown(line)}\n\n" for line in enforcement.advice)])
    shown = [row for row in rows
             if command.service is None or row.service.lower() == command.service.lower()]
    if not shown:
        return warnings + table
    notes = attestation_lines(run.where.policy, run.ctx.attestations.health(),
                              command.service)
    return warnings + "\n\n".join([flowchart(policy_edges(run.where.policy), shown), table,
                                    *(["\n".join(notes)] if notes else [])])


def _github_error(exc: gidgethub.GitHubException) -> str:
    status = getattr(exc, "status_code", None)
    code = f"{int(status)} " if status is not None else ""
    return f"{code}({escape_markdown(error_text(exc))})"
