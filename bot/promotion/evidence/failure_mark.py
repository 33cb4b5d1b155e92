"""The mark that a digest was reported failing in an environment: a check run of Conveyor's.

Only the app itself can create or change a check run attributed to it, so the mark is
trustworthy where a label, a comment or a body marker is not. It sits on the commit that
brought the digest into the environment's file on the default branch (the promotion's merge
commit), is named per service and environment, and carries:

- ``external_id``: the digest;
- ``conclusion``: ``failure`` while it stands, ``neutral`` once a person cleared it;
- ``completed_at``: when the failure was reported;
- ``details_url``: the report;
- a hidden line in ``output.text`` with what the automatic rollback did (pending, the PR's
  number, or why there is none), so a restart finishes what an interrupted job began.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import FailureMark
from bot.github.checks import check_output, check_run, create_check_run, is_own, update_check_run
from bot.promotion.evidence.deployed import parse_time

MARK_PREFIX = "conveyor/reported-failing"
_STATE_RE = re.compile(r"<!-- conveyor:watch (\{.*?\}) -->")


def mark_name(service: str, environment: str) -> str:
    return f"{MARK_PREFIX} ({service} in {environment})"


@dataclass(frozen=True)
class Mark:
    """A mark as read back from GitHub."""

    run_id: int
    digest: str
    environment: str
    at: datetime
    url: str
    standing: bool  # conclusion failure: not cleared
    rollback: str  # "pending", "#<number>", "none: <why>"
    title: str
    summary: str

    def as_failure(self) -> FailureMark | None:
        if not self.standing:
            return None
        return FailureMark(digest=self.digest, environment=self.environment, at=self.at,
                           url=self.url)




async def find_mark(gh: GitHubAPI, full_name: str, sha: str, service: str, environment: str,
                    digest: str, *, own_app_id: int | None, own_login: str) -> Mark | None:
    """Conveyor's mark for (service, environment, digest) on the commit, cleared or not."""
    runs = await gh.getitem(
        f"/repos/{full_name}/commits/{sha}/check-runs?check_name="
        f"{quote(mark_name(service, environment))}&filter=all&per_page=100")
    for run in runs.get("check_runs") or []:
        if not is_own(run, own_app_id, own_login) or run.get("external_id") != digest:
            continue
        output = run.get("output") or {}
        found = _STATE_RE.search(str(output.get("text") or ""))
        state = json.loads(found.group(1)) if found else {}
        return Mark(
            run_id=int(run["id"]), digest=digest, environment=environment,
            at=parse_time(str(run.get("completed_at") or run.get("started_at"))),
            url=str(run.get("details_url") or run.get("html_url") or ""),
            standing=run.get("conclusion") == "failure",
            rollback=str(state.get("rollback") or "none"),
            title=str(output.get("title") or ""), summary=str(output.get("summary") or ""),
        )
    return None


def _text(rollback: str) -> str:
    return f"<!-- conveyor:watch {json.dumps({'rollback': rollback})} -->"


async def write_mark(gh: GitHubAPI, full_name: str, sha: str, service: str, environment: str,
                     digest: str, *, reported_at: datetime, report_url: str, title: str,
                     summary: str, rollback: str) -> Mark:
    output = check_output(title[:255], summary, text=_text(rollback))
    created = await create_check_run(gh, full_name, sha, check_run(
        mark_name(service, environment), output, conclusion="failure",
        completed_at=reported_at, external_id=digest, details_url=report_url))
    return Mark(run_id=int(created["id"]), digest=digest, environment=environment,
                at=reported_at, url=str(created.get("details_url") or created.get("html_url")
                                        or ""), standing=True, rollback=rollback,
                title=title, summary=summary)


async def update_mark(gh: GitHubAPI, full_name: str, mark: Mark, *, rollback: str | None = None,
                      summary: str | None = None, cleared: bool = False) -> None:
    """Record the rollback's outcome, or clear the mark (a person decided)."""
    data: dict[str, Any] = {"output": check_output(
        mark.title, summary if summary is not None else mark.summary,
        text=_text(rollback if rollback is not None else mark.rollback))}
    if cleared:
        data["conclusion"] = "neutral"
    await update_check_run(gh, full_name, mark.run_id, data)
