"""Merging Conveyor's own promotion PRs (auto_merge), guarded by the head sha.

GitHub refuses a merge with 405 (or 422) while mergeability is being computed, while the base
moves, or for good: conflicts, required reviews or checks that never come. Conveyor tries a
bounded number of times, 15 s apart, each time checking that the PR is still open and still at
Conveyor's commit. When it stops, the PR gets one comment (edited in place on later stops, found
by a hidden marker) saying why and what unblocks it; `/recheck` tries again.

A PR Conveyor opens into an ungated `auto_merge` environment is merged as it is opened: nobody
can read a check on it before, and the push of its merge gets the config check, so the PR gets
none of its own (`merged_as_opened`) unless GitHub refuses the merge at once, when the opener
posts it (the PR waits).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.domain.policy import Environment, Policy
from bot.domain.promotions.marker import branch_environment
from bot.github.limits import fit
from bot.github.repos import write_comment
from bot.promotion.authorship.trust import ConveyorCommit, opened_by_conveyor, trusted_pull
from bot.runtime.timer_jobs import MergeRetry
from bot.text import escape_markdown

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

RETRY_AFTER = timedelta(seconds=15)
MAX_ATTEMPTS = 5
STOPPED_MARKER = "<!-- conveyor:merge-stopped"


@dataclass(frozen=True)
class UnmergedPull:
    """A PR Conveyor opened into an ungated `auto_merge` environment whose merge did not
    happen (the job failed after opening it): the PR, Conveyor's commit at its head, and the
    environment."""

    pr: dict[str, Any]
    head_sha: str
    env: Environment


# GitHub's `mergeable_state` of a pull request, in words.
STATES = {
    "dirty": "the branch conflicts with the base branch",
    "blocked": "branch protection blocks it: a required review or a required check is missing",
    "behind": "the base branch requires branches to be up to date, and this one is behind",
    "unstable": "a required check is failing",
    "draft": "it is a draft",
}


def merged_as_opened(policy: Policy, pr: dict[str, Any], bot_login: str) -> bool:
    """Whether ``pr`` is one Conveyor opened into an ungated `auto_merge` environment (its
    branch, named by Conveyor, says which): the opener merges it, or posts its config check
    when GitHub refuses the merge."""
    if not opened_by_conveyor(bot_login, pr):
        return False
    name = branch_environment(str((pr.get("head") or {}).get("ref") or ""))
    env = policy.environments.get(name) if name is not None else None
    return env is not None and env.auto_merge and not env.gated


async def merge_promotion(ctx: Context, gh: GitHubAPI, full_name: str, number: int,
                          expected_head: str, method: str, *, environment: str, attempt: int = 1,
                          gated: bool = False) -> bool:
    """Merge if the head is still the commit Conveyor made; retry later (bounded) while GitHub
    refuses. A PR a human has pushed to is never merged. ``environment`` labels the metric."""
    try:
        await gh.put(f"/repos/{full_name}/pulls/{number}/merge",
                     data={"sha": expected_head, "merge_method": method})
    except gidgethub.BadRequest as exc:
        if exc.status_code == 409:
            log.info("not merging: the head changed since Conveyor's commit",
                     extra={"repository": full_name, "pull": number})
            return False
        if exc.status_code in (405, 422):
            return await _refused(ctx, gh, full_name, number, {
                "head": expected_head, "method": method, "gated": gated,
                "environment": environment}, attempt, str(exc))
        raise
    ctx.metrics.promotions.labels(environment, "merged").inc()
    log.info("promotion merged", extra={"repository": full_name, "pull": number})
    return True


async def _refused(ctx: Context, gh: GitHubAPI, full_name: str, number: int, retry: dict[str, Any],
                   attempt: int, answer: str) -> bool:
    """``retry``: what a later attempt needs (head, method, gated, environment)."""
    expected_head = retry["head"]
    pr = await gh.getitem(f"/repos/{full_name}/pulls/{number}")
    fields = {"repository": full_name, "pull": number, "attempt": attempt, "error": answer}
    if pr.get("merged"):
        return True
    if pr.get("state") != "open" or pr["head"]["sha"] != expected_head:
        log.info("not merging: the PR was closed or pushed to", extra=fields)
        return False
    state = str(pr.get("mergeable_state") or "unknown")
    if state == "dirty" or attempt >= MAX_ATTEMPTS:
        log.warning("merge given up; the PR says why", extra={**fields, "state": state})
        await say_stopped(ctx, gh, full_name, number, stopped_text(answer, state, attempt), retry)
        return False
    log.info("not mergeable yet, retrying later", extra={**fields, "state": state})
    ctx.scheduler.at(f"merge:{full_name}#{number}", ctx.clock() + RETRY_AFTER, MergeRetry(
        full_name, number, str(retry["head"]), str(retry["method"]),
        environment=str(retry["environment"]), attempt=attempt + 1,
        gated=bool(retry["gated"]), installation=getattr(gh, "installation_id", None)))
    return False


def stopped_text(answer: str, state: str, attempts: int) -> str:
    why = STATES.get(state, f"GitHub's mergeable state is `{state}`")
    tried = "at once" if attempts == 1 else f"after {attempts} attempts"
    return (f"Conveyor stopped trying to merge this pull request ({tried}): GitHub answers "
            f"\u201c{escape_markdown(answer)}\u201d — {why}.\n\n"
            "Resolve that (approve, fix the check, or rebase the branch), then comment "
            "`/recheck` to try again; or merge it yourself.")


async def say_stopped(ctx: Context, gh: GitHubAPI, full_name: str, number: int, text: str,
                      retry: dict[str, Any]) -> None:
    """One comment per PR: edited if Conveyor already left one, never repeated."""
    body = fit(f"{STOPPED_MARKER} {json.dumps(retry, sort_keys=True)} -->\n{text}")
    await write_comment(gh, full_name, number, body,
                        replacing=await stopped_comment(ctx, gh, full_name, number))


async def stopped_comment(ctx: Context, gh: GitHubAPI, full_name: str, number: int
                          ) -> dict[str, Any] | None:
    """Conveyor's own comment (by its login: a marker alone can be copied by anyone)."""
    async for comment in gh.getiter(f"/repos/{full_name}/issues/{number}/comments"):
        body = comment.get("body") or ""
        author = (comment.get("user") or {}).get("login") or ""
        if body.startswith(STOPPED_MARKER) and ctx.bot_login \
                and author.lower() == ctx.bot_login.lower():
            return dict(comment)
    return None


async def retry_stopped_merge(ctx: Context, gh: GitHubAPI, full_name: str, pr: dict[str, Any],
                              policy: Policy) -> bool:
    """`/recheck` on a PR whose merge Conveyor gave up: try again from the first attempt. A
    gated PR is merged by its gate once it passes, which `/recheck` re-evaluates anyway.

    Anyone with write access can edit Conveyor's comment, so it decides nothing: the head
    must be the one it names, the PR's current head and Conveyor's own commit; the method and
    whether the PR is gated come from the policy."""
    number = int(pr["number"])
    found = await stopped_comment(ctx, gh, full_name, number)
    if found is None:
        return False
    head = str((pr.get("head") or {}).get("sha") or "")
    if not head or _stopped_head(found) != head:
        return False
    env = _auto_merged(policy, await trusted_pull(gh, full_name, pr, ctx.bot_login), head)
    if env is None:
        return False
    return await merge_promotion(ctx, gh, full_name, number, head, env.merge_method,
                                 environment=env.name)


def _stopped_head(comment: dict[str, Any]) -> str | None:
    """The head a stopped merge was for, as Conveyor's comment names it."""
    first_line = str(comment.get("body") or "").split("\n", 1)[0]
    try:
        return str(json.loads(first_line.removeprefix(STOPPED_MARKER).removesuffix("-->"))["head"])
    except (ValueError, KeyError, TypeError):
        return None


def _auto_merged(policy: Policy, trusted: ConveyorCommit | None, head: str) -> Environment | None:
    """The ungated `auto_merge` environment Conveyor's commit ``head`` promotes into; None when
    the head is not Conveyor's commit or the environment is gated or merged by hand."""
    if trusted is None or not trusted.head or trusted.sha != head:
        return None
    env = policy.environments.get(trusted.environment)
    return env if env is not None and env.auto_merge and not env.gated else None
