"""The one comment that answers a command comment, and the texts it is made of: each outcome
described, the refusals of a command comment that runs nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.domain.commands.parse import HELP_TEXT, Command, CommandError
from bot.domain.gate.model import Verdict
from bot.github.limits import fit
from bot.github.repos import comment
from bot.names import GATE_CHECK, POLICY_PATH
from bot.promotion.opening.opener import OpenResult
from bot.promotion.policies import BrokenPolicy
from bot.promotion.trains.opener import TrainResult
from bot.text import escape_markdown, shortened

REPLY_MARKER = "<!-- conveyor:reply {comment_id} -->"
MAX_ECHO = 120


@dataclass
class Reply:
    """The one comment that answers a command comment: outcome blocks, then the help text
    when a command was unknown or malformed."""

    comment_id: int
    blocks: list[str] = field(default_factory=list)
    with_help: bool = False
    reevaluate: bool = False  # a command changed the hold: run the gate once it is posted

    def add(self, command: Command | CommandError | None, text: str) -> None:
        if command is None:
            self.blocks.append(text)
            return
        echo = f"**`{_echo(command.raw)}`**"
        self.blocks.append(f"{echo}\n\n{text}" if "\n" in text else f"{echo} {text}")

    def render(self) -> str:
        parts = [REPLY_MARKER.format(comment_id=self.comment_id), *self.blocks]
        if self.with_help:
            parts.append(HELP_TEXT)
        return fit("\n\n".join(parts))

    async def post(self, gh: GitHubAPI, full_name: str, number: int) -> None:
        await comment(gh, full_name, number, self.render())


async def already_answered(gh: GitHubAPI, full_name: str, number: int, comment: dict[str, Any],
                           bot_login: str) -> bool:
    """True when Conveyor (``bot_login``) has replied to this comment before (a redelivered
    event). Another bot's comment with the marker answers nothing: a writer's workflow could
    post it first to silence a command."""
    marker = REPLY_MARKER.format(comment_id=comment["id"])
    since = comment.get("created_at")
    query = f"?since={since}&per_page=100" if since else "?per_page=100"
    async for item in gh.getiter(f"/repos/{full_name}/issues/{number}/comments{query}"):
        if _posted_by(item, bot_login) and marker in (item.get("body") or ""):
            return True
    return False


def _posted_by(item: dict[str, Any], bot_login: str) -> bool:
    login = str((item.get("user") or {}).get("login") or "")
    return bool(bot_login) and login.lower() == bot_login.lower()


def permission_refusal(comment_id: int, commenter: str, full_name: str, permission: str) -> str:
    reply = Reply(comment_id)
    having = "no access" if permission == "none" else f"{permission} access"
    reply.add(None, f"Sorry @{commenter}, Conveyor's commands can only be run by people with "
                    f"write, maintain or admin permission on {full_name}; you have {having}. "
                    "Ask a maintainer to run the command for you.")
    return reply.render()


def permission_unknown(comment_id: int, commenter: str) -> str:
    reply = Reply(comment_id)
    reply.add(None, f"⚠️ Sorry @{commenter}, Conveyor could not check your permission on this "
                    "repository just now (GitHub did not answer), so nothing was run. Comment "
                    "again in a minute.")
    return reply.render()


def policy_refusal(comment_id: int, repo: BrokenPolicy) -> str:
    reply = Reply(comment_id)
    issues = repo.issues
    listed = "\n".join(f"- `{issue.path}` line {issue.line}: {escape_markdown(issue.message)}"
                       for issue in issues[:20])
    more = f"\n- … and {len(issues) - 20} more" if len(issues) > 20 else ""
    reply.add(None, f"❌ Conveyor cannot run commands in {repo.full_name}: `{POLICY_PATH}` on "
                    f"`{repo.default_branch}` is invalid and no earlier valid policy is known.\n\n"
                    f"{listed}{more}\n\nFix the file (the `conveyor/config-check` check shows "
                    "the same errors) and comment again.")
    return reply.render()


def describe_train(result: TrainResult, group: str, environment: str, *,
                   rollback: bool = False) -> str:
    what = f"{'rollback' if rollback else 'train'} {group} to {environment}"
    left = ""
    if result.left_out:
        left = (" Left out, already at that digest: "
                + ", ".join(f"{service} `{version}`" for service, version in result.left_out)
                + ".")
    if result.action == "opened":
        moved = ", ".join(result.moved)
        merged = " It was merged right away (auto-merge)." if result.merged else ""
        superseded = (" Superseded: " + ", ".join(f"#{n}" for n in result.superseded) + "."
                      if result.superseded else "")
        return (f"✅ opened #{result.number}: {what} ({len(result.moved)} services: {moved})."
                f"{left}{superseded}{merged}")
    if result.action == "exists":
        return f"ℹ️ the {what} is already open: #{result.number}.{left}"
    if result.action == "live":
        return f"ℹ️ nothing to move: {result.message}; no pull request opened.{left}"
    return f"❌ not opened: {result.message}.{left}"


def describe_result(result: OpenResult, service: str, version: str, environment: str, *,
                    rollback: bool = False) -> str:
    what = f"{'rollback of' if rollback else 'promotion of'} {service} {version} to {environment}"
    if result.action == "opened":
        merged = " It was merged right away (auto-merge)." if result.merged else ""
        return f"✅ opened #{result.number}: {what}.{merged}"
    if result.action == "exists":
        return f"ℹ️ the {what} is already open: #{result.number}."
    if result.action == "live":
        return f"ℹ️ {result.markdown()}; nothing to open."
    if result.action == "skipped":
        return f"⏭️ not opened: {result.markdown()}."
    return f"❌ not opened: {result.markdown()}."


def describe_verdict(verdict: Verdict) -> str:
    state = verdict.conclusion or verdict.status.replace("_", " ")
    icon = {"success": "✅", "failure": "❌", "action_required": "✋"}.get(state, "⏳")
    return (f"🔄 re-evaluated `{GATE_CHECK}`: {icon} **{state}** — "
            f"{escape_markdown(verdict.title)}")


def _echo(raw: str) -> str:
    return shortened(raw.replace("`", "'"), MAX_ECHO)
