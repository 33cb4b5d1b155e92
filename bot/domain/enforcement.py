"""Whether GitHub enforces the gate: what the default branch requires, judged (pure).

The gate blocks a merge only where GitHub requires it, and only when GitHub requires it from
Conveyor's app: a check required "from any source" is satisfied by a commit status or check
run of that name from anyone who can post one (any writer's workflow, with its
`GITHUB_TOKEN`); one required from another app by that app alone. Branch protection names the
source of each required check as `app_id`, a ruleset as `integration_id`; absent or null means
any source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RequiredCheck:
    """A status check the default branch requires, and where that is set."""

    context: str
    app_id: int | None  # the app that must provide it; None: any source
    where: str  # "branch protection" or "ruleset <id>"


@dataclass(frozen=True)
class Enforcement:
    """What the default branch's protection means for the gate: nothing to say where it is
    required from Conveyor's app, else what is wrong in one sentence each."""

    branch: str
    findings: tuple[str, ...] = ()

    @property
    def enforced(self) -> bool:
        return not self.findings


def judge_enforcement(checks: Sequence[RequiredCheck], *, gate: str, app_id: int | None,
                      branch: str) -> Enforcement:
    """How ``checks`` (every required check of ``branch``) treat the check run ``gate`` that
    the app ``app_id`` posts. GitHub requires every rule at once, so one requirement from
    Conveyor's app is enough, whatever others say."""
    named = [check for check in checks if check.context == gate]
    if any(check.app_id is not None and check.app_id == app_id for check in named):
        return Enforcement(branch)
    if not named:
        return Enforcement(branch, (
            f"`{gate}` is not a required check on `{branch}`: GitHub merges a pull request "
            "whatever the gate says. Require it from Conveyor's app in branch protection or "
            "a ruleset.",))
    findings = []
    anywhere = [check.where for check in named if check.app_id is None]
    if anywhere:
        findings.append(
            f"`{gate}` is required on `{branch}` from any source ({', '.join(anywhere)}): any "
            "writer's workflow can post a status of that name and turn the merge button "
            "green. Set its source to Conveyor's app.")
    others = [f"app {check.app_id} ({check.where})" for check in named
              if check.app_id is not None]
    if others and not anywhere:
        findings.append(
            f"`{gate}` is required on `{branch}` from another app ({', '.join(others)}), "
            "not from Conveyor's: Conveyor's gate does not count there. Set its source to "
            "Conveyor's app.")
    return Enforcement(branch, tuple(findings))


def foreign_report(gate: str, kind: str, author: str) -> str:
    """The finding for a report named like the gate that someone else posted on a head."""
    return (f"a {kind} named `{gate}` was posted on this pull request's head by {author}, "
            "not by Conveyor: it is not the gate")
