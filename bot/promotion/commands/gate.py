"""`/hold`, `/unhold` and `/recheck`: what a person asks of the gate on an open pull
request."""

from __future__ import annotations

from bot.domain.commands.parse import Hold
from bot.github.repos import add_labels, remove_label
from bot.names import GATE_CHECK
from bot.promotion.authorship.trust import trusted_marker
from bot.promotion.commands.command_run import CommandRun
from bot.promotion.commands.replies import describe_verdict
from bot.promotion.commands.rollback import watcher
from bot.promotion.gate.hold import HOLD_LABEL, HOLD_MARKER
from bot.promotion.opening.merger import retry_stopped_merge
from bot.text import unlinked


async def open_pull_or_refusal(run: CommandRun, command: str) -> str | None:
    refusal = run.not_a_pull(command, "(the gate is a check on pull requests)")
    if refusal:
        return refusal
    pr = await run.pull()
    if pr.get("state") != "open":
        state = "merged" if pr.get("merged") else "closed"
        return f"❌ #{run.where.number} is {state}; the gate only runs on open pull requests."
    return None


async def hold(run: CommandRun, command: Hold) -> str:
    refusal = await open_pull_or_refusal(run, "hold")
    if refusal:
        return refusal
    was_held = await run.held()
    await add_labels(run.gh, run.repo, run.where.number, [HOLD_LABEL])
    run.is_held = True
    run.reply.reevaluate = True
    # The gate reads the reason from the text after the marker, up to the end of the line,
    # and escapes it itself (its title is plain text): keep it as written, only without
    # mentions, references and HTML.
    reason = unlinked(" ".join(command.reason.split())).replace("<", "\\<")
    what = "still on hold, with this reason" if was_held else f"on hold (label `{HOLD_LABEL}`)"
    return (f"⏸️ {what}: `{GATE_CHECK}` fails until someone comments `/unhold`. "
            f"{HOLD_MARKER}" + (f" Reason: {reason}" if reason else ""))


async def unhold(run: CommandRun) -> str:
    refusal = await open_pull_or_refusal(run, "unhold")
    if refusal:
        return refusal
    if not await run.held():
        cleared = await clear_failure_mark(run)
        if cleared is not None:
            return cleared
        return f"ℹ️ #{run.where.number} is not on hold; nothing to lift."
    await remove_label(run.gh, run.repo, run.where.number, HOLD_LABEL)
    run.is_held = False
    run.reply.reevaluate = True
    return f"▶️ hold lifted; `{GATE_CHECK}` is evaluated again without it."


async def clear_failure_mark(run: CommandRun) -> str | None:
    """`/unhold` on a promotion whose digest is marked failed in an environment before its
    own (directly upstream or further up the graph): a person decides that it may go on; the
    marks are cleared and the gate evaluated again (it still asks for everything else).
    Where the promotion's environment needs approvals, only someone whose approval counts
    there may decide so: a trusted failure report stands until a person who could let the
    digest in says otherwise."""
    found = await trusted_marker(run.gh, run.repo, await run.pull(), run.ctx.bot_login)
    if found is None:
        return None
    marker = found[0]
    policy = run.where.policy
    if marker.environment not in policy.environments or marker.service not in policy.services:
        return None
    watching = watcher(run.capabilities, run.gh, run.where.repo)
    standing = [mark for name in policy.ancestors(marker.environment)
                if (mark := await watching.standing(marker.service, name, marker.digest))
                is not None]
    if not standing:
        return None
    env = policy.environments[marker.environment]
    commenter = run.where.commenter
    if env.approvals and not await run.capabilities.gates.approvals.may_approve(
            run.gh, run.repo, commenter, policy, env.name):
        # a writer (commands are refused to everyone else) fails only a list of approvers
        who = ", ".join(f"`{a}`" for a in env.approvers)
        return (f"🚫 @{commenter} cannot clear a failure mark on a promotion to "
                f"`{env.name}`: only its approvers ({who}) decide that a digest reported "
                "failing may go on. The mark stands.")
    for mark in standing:
        await watching.clear(mark, marker.service, commenter)
    run.reply.reevaluate = True
    titles = "; ".join(mark.title for mark in standing)
    what = "the failure mark is" if len(standing) == 1 else "the failure marks are"
    return f"▶️ {what} cleared: {titles} — `{GATE_CHECK}` is evaluated again without it."


async def recheck(run: CommandRun) -> str:
    refusal = await open_pull_or_refusal(run, "recheck")
    if refusal:
        return refusal
    gates = run.capabilities.gates
    verdict = await gates.evaluate(run.gh, run.where.repo, run.where.number)
    if await retry_stopped_merge(run.ctx, run.gh, run.repo, await run.pull(), run.where.policy):
        return "Merged."
    if verdict is None:
        # An evaluation was already running; it re-runs once more. Compute the state here.
        facts = await gates.facts_of(run.gh, run.where.repo, await run.gh.getitem(
            f"/repos/{run.repo}/pulls/{run.where.number}"))
        verdict = await gates.verdict_for(run.gh, run.where.repo, facts)
    return describe_verdict(verdict)
