"""Deployment reports as evidence: which reports match, whose count, and which one wins.

A report is a commit status, a check run or a deployment status posted on a deployment-repo
commit. It matches an environment when its context, check name or deployment environment is
the environment's name or matches the environment's ``deployed_context`` pattern; it counts when
its reporter is trusted (listed in ``deployed_by``, or anyone when the list is empty) and is not
Conveyor itself. Among the final reports that count, the newest wins — by time, and within one
second (GitHub's resolution) by GitHub's id — so a ``failure`` after a ``success`` takes the
evidence away, and a ``pending`` report changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Literal

__all__ = [
    "FINAL_STATES",
    "Judgement",
    "Report",
    "ReportKind",
    "Trust",
    "check_run_state",
    "context_pattern",
    "deployment_state",
    "fill_context",
    "judge",
    "may_match",
]

ReportKind = Literal["status", "check_run", "deployment"]
FINAL_STATES = ("success", "failure", "error")

# Check-run conclusions: which say the deployment failed, which say nothing about it.
_FAILED_CONCLUSIONS = {"failure", "timed_out", "cancelled", "action_required", "startup_failure"}


@dataclass(frozen=True)
class Report:
    kind: ReportKind
    name: str  # the status context, the check run's name, or the deployment's environment
    state: str  # success | failure | error | pending (anything not final)
    at: datetime
    reporter: str  # login; apps as "<slug>[bot]"
    sha: str
    url: str
    app_id: int | None = None  # the GitHub App that made the report, where GitHub says
    # GitHub's id of the report (status, check run, deployment status): its timestamps have
    # one-second resolution, and of two reports in one second the higher id came later
    order: int = 0

    def describe(self) -> str:
        what = {"status": "status", "check_run": "check run", "deployment": "deployment"}
        return f"{what[self.kind]} {self.name} {self.state} on {self.sha[:7]} by {self.reporter}"


@dataclass(frozen=True)
class Trust:
    """Whose reports count: ``allowed`` logins (empty: anyone) but never Conveyor's own."""

    allowed: tuple[str, ...]
    own_login: str
    own_app_id: int | None

    def refusal(self, report: Report) -> str | None:
        """Why the report does not count, or None when it does."""
        login = report.reporter.casefold()
        if (self.own_app_id is not None and report.app_id == self.own_app_id) or (
            self.own_login and login == self.own_login.casefold()
        ):
            return "Conveyor's own report"
        if self.allowed and login not in {a.casefold() for a in self.allowed}:
            return "not in deployed_by"
        return None


@dataclass(frozen=True)
class Judgement:
    """``evidence``: the first success since the newest failure, when the newest final report
    that counts is a success; ``latest``: that newest final report; ``ignored``: reports that
    matched but do not count, with the reason."""

    evidence: Report | None
    latest: Report | None
    ignored: tuple[tuple[Report, str], ...]

    def notes(self) -> tuple[str, ...]:
        notes = []
        if self.latest is not None and self.evidence is None:
            notes.append(f"the latest report is a {self.latest.state}: {self.latest.describe()}")
        if self.ignored:
            shown = [f"{report.describe()} ({why})" for report, why in self.ignored[:5]]
            more = len(self.ignored) - len(shown)
            notes.append(
                "ignored: " + "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
            )
        return tuple(notes)


def judge(reports: Iterable[Report], trust: Trust) -> Judgement:
    counted: list[Report] = []
    ignored: list[tuple[Report, str]] = []
    for report in reports:
        why = trust.refusal(report)
        if why is not None:
            ignored.append((report, why))
        elif report.state in FINAL_STATES:
            counted.append(report)
    counted.sort(key=lambda r: (r.at, r.order))
    ignored.sort(key=lambda item: (item[0].at, item[0].order), reverse=True)
    if not counted:
        return Judgement(None, None, tuple(ignored))
    latest = counted[-1]
    if latest.state != "success":
        return Judgement(None, latest, tuple(ignored))
    # The soak runs from the first success that no failure followed.
    first = latest
    for report in reversed(counted):
        if report.state != "success":
            break
        first = report
    return Judgement(first, latest, tuple(ignored))


def check_run_state(status: str | None, conclusion: str | None) -> str:
    if status != "completed" or conclusion is None:
        return "pending"
    if conclusion == "success":
        return "success"
    if conclusion in _FAILED_CONCLUSIONS:
        return "failure"
    return "pending"  # neutral, skipped, stale: no word about the deployment


def deployment_state(state: str) -> str:
    # queued, in_progress, pending and inactive (superseded by a newer deployment) decide nothing
    return state if state in FINAL_STATES else "pending"


@lru_cache(maxsize=4096)
def context_pattern(template: str, service: str, env: str) -> re.Pattern[str]:
    """``deployed_context`` as a regular expression for one service and environment:
    ``{service}`` and ``{env}`` are literal, ``*`` is one or more characters other than ``/``."""
    filled = template.replace("{service}", "\0s").replace("{env}", "\0e")
    parts = []
    for piece in re.split(r"(\*|\x00s|\x00e)", filled):
        if piece == "*":
            parts.append("[^/]+")
        elif piece == "\0s":
            parts.append(re.escape(service))
        elif piece == "\0e":
            parts.append(re.escape(env))
        else:
            parts.append(re.escape(piece.replace("{{", "{").replace("}}", "}")))
    return re.compile("".join(parts))


def fill_context(template: str, service: str, env: str, wildcard: str = "sandbox") -> str:
    """One context the template matches, with ``wildcard`` for each ``*`` (for the sandbox)."""
    return (template.replace("{service}", service).replace("{env}", env).replace("*", wildcard)
            .replace("{{", "{").replace("}}", "}"))


@lru_cache(maxsize=1024)
def _any_service_pattern(template: str, env: str) -> re.Pattern[str]:
    return re.compile(context_pattern(template, "\0", env).pattern.replace(re.escape("\0"), ".+"))


def may_match(kind: ReportKind, template: str | None, env: str, name: str) -> bool:
    """Whether a report named ``name`` may be about ``env`` for some service (webhooks ask
    before re-evaluating); deployments also match by the environment's own name."""
    if kind == "deployment" and name == env:
        return True
    return template is not None and _any_service_pattern(template, env).fullmatch(name) is not None
