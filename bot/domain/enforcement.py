"""Whether GitHub enforces the gate: what the default branch requires, judged (pure).

The gate blocks a merge only where GitHub requires it, and only when GitHub requires it from
Conveyor's app: a check required "from any source" is satisfied by a commit status or check
run of that name from anyone who can post one (any writer's workflow, with its
`GITHUB_TOKEN`); one required from another app by that app alone. Branch protection names the
source of each required check as `app_id`, a ruleset as `integration_id`; absent or null means
any source.

Where the gate is enforced, two more settings decide what its verdict is worth: requiring
branches to be up to date before merging (else a branch behind the default branch can merge
on a verdict given before the branch last moved, and files the gate judges as files merge
with what the branch took meanwhile) and requiring approval of the most recent reviewable push
(else an approver can approve a change someone else pushed onto the pull request). A ruleset
shows both in "Get rules for a branch"; branch protection shows neither in "Get a branch" (they
are in "Get branch protection", which needs the `administration` permission Conveyor does not
ask for), so where branch protection applies and no ruleset sets one, Conveyor says it cannot
see it rather than that it is off. What is said of them is advice: the gate counts as enforced
either way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequiredCheck:
    """A status check the default branch requires, and where that is set."""

    context: str
    app_id: int | None  # the app that must provide it; None: any source
    where: str  # "branch protection" or "ruleset <id>"
    # its rule requires branches to be up to date before merging (a ruleset's
    # `strict_required_status_checks_policy`); branch protection's `strict` cannot be seen
    up_to_date: bool = False


@dataclass(frozen=True)
class BranchRules:
    """What the default branch requires, as far as `metadata: read` shows it."""

    checks: tuple[RequiredCheck, ...] = ()
    # branch protection applies: its up-to-date and review settings cannot be seen
    protected: bool = False
    # a ruleset's pull request rule requires approval of the most recent reviewable push
    last_push_approval: bool = False


@dataclass(frozen=True)
class Enforcement:
    """What the default branch's protection means for the gate: nothing to say where it is
    required from Conveyor's app, else what is wrong in one sentence each. ``advice``: where
    it is, the settings beside it that are missing or cannot be seen, one sentence each."""

    branch: str
    findings: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()

    @property
    def enforced(self) -> bool:
        return not self.findings


UP_TO_DATE = "Require branches to be up to date before merging"
LAST_PUSH = "Require approval of the most recent reviewable push"


def judge_enforcement(rules: BranchRules, *, gate: str, app_id: int | None,
                      branch: str) -> Enforcement:
    """How ``rules`` (what ``branch`` requires) treat the check run ``gate`` that the app
    ``app_id`` posts. GitHub requires every rule at once, so one requirement from Conveyor's
    app is enough, whatever others say; only then is ``advice`` given."""
    named = [check for check in rules.checks if check.context == gate]
    if any(check.app_id is not None and check.app_id == app_id for check in named):
        return Enforcement(branch, advice=advise(rules, gate=gate, branch=branch))
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


def advise(rules: BranchRules, *, gate: str, branch: str) -> tuple[str, ...]:
    """One sentence per protection beside the gate that ``branch`` lacks, or that branch
    protection may hold where Conveyor cannot see it. Being up to date counts only from a
    rule that requires ``gate``."""
    named = [check for check in rules.checks if check.context == gate]
    rulesets = list(dict.fromkeys(check.where for check in named
                                  if check.where != "branch protection"))
    advice = []
    if not any(check.up_to_date for check in named):
        advice.append(_advice(
            UP_TO_DATE, f"requiring `{gate}`", branch, rules.protected,
            f"a pull request behind `{branch}` can merge on a verdict given before `{branch}` "
            "last moved", " or ".join(rulesets) or f"a ruleset that requires `{gate}`"))
    if not rules.last_push_approval:
        advice.append(_advice(
            LAST_PUSH, "", branch, rules.protected,
            "an approver can approve a change someone else pushed onto the pull request",
            "a ruleset's pull request rule"))
    return tuple(advice)


def _advice(setting: str, which: str, branch: str, protected: bool, risk: str,
            where: str) -> str:
    which = f" {which}" if which else ""
    if protected:
        return (f"Conveyor cannot see whether branch protection on `{branch}` has "
                f"\"{setting}\", and no ruleset{which} has it: without it {risk}. Check "
                f"branch protection, or turn it on in {where}.")
    return f"No rule{which} on `{branch}` has \"{setting}\": {risk}. Turn it on in {where}."


def foreign_report(gate: str, kind: str, author: str) -> str:
    """The finding for a report named like the gate that someone else posted on a head."""
    return (f"a {kind} named `{gate}` was posted on this pull request's head by {author}, "
            "not by Conveyor: it is not the gate")
