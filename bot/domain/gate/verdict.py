"""The verdict of the check run ``conveyor/promotion-gate``, as a pure function.

The I/O layer gathers the facts (which image references the pull request changes in gated
files, the evidence found upstream for each digest, the reviews, hold and freeze state) into a
:class:`GateInput`; :func:`evaluate_gate` turns them into a :class:`Verdict` without touching
GitHub, so every rule is testable on plain values. The conditions of each changed image are
in `evidence.py`, those of reviews in `reviews.py`; this module adds the freeze and
the hold and turns the checklist into the verdict.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bot.domain.gate.evidence import change_conditions
from bot.domain.gate.model import (
    NO_GATED_CHANGE,
    BuildFinding,
    CheckStatus,
    Condition,
    GateInput,
    Verdict,
)
from bot.domain.gate.reviews import approvals_condition, changes_requested
from bot.names import POLICY_PATH
from bot.text import format_time


def evaluate_gate(gate: GateInput) -> Verdict:
    """The verdict of the gate on the facts in ``gate``, deterministic and without I/O.

    Every condition is listed, met or not. An unmet condition that fails makes the verdict
    ``failure``; else missing approvals make it ``action_required``; else a running wait (soak,
    freeze) keeps it ``in_progress``, to be evaluated again at ``recheck_at`` (when the first
    wait ends); else it is ``success``. No gated change and no file problem gives
    :data:`NO_GATED_CHANGE`.
    """
    if not gate.changes and not gate.problems and not gate.builds and not gate.policy_changed:
        return NO_GATED_CHANGE

    conditions: list[Condition] = [
        Condition(ok=False, text=problem.reason, subject=f"{problem.path} ({problem.environment})")
        for problem in gate.problems
    ]
    conditions.extend(build_condition(finding) for finding in gate.builds)
    for change in gate.changes:
        conditions.extend(change_conditions(change, gate))

    # A build whose images stay as they were (replicas, resources, labels) asks for nothing.
    environments = list(dict.fromkeys(
        [change.environment for change in gate.changes]
        + [problem.environment for problem in gate.problems]
        + [finding.environment for finding in gate.builds
           if finding.problem is not None or finding.needs_approval]))
    conditions.extend(_freeze_condition(environment, gate) for environment in environments)

    approving = list(dict.fromkeys([*environments, *gate.policy_changes]))
    known_rules = [gate.rules[env] for env in approving if env in gate.rules]
    blocking_reviews = changes_requested(gate)
    hold = _hold_condition(gate)
    approvals = approvals_condition(known_rules, gate)
    conditions[:0] = policy_conditions(gate, approved=approvals.ok)
    conditions.append(approvals)
    conditions.extend(blocking_reviews)
    conditions.append(hold)
    return replace(_verdict(conditions, priority=[hold, *blocking_reviews], now=gate.now),
                   notes=gate.notes)


def _verdict(conditions: list[Condition], *, priority: list[Condition], now: datetime) -> Verdict:
    unmet = [c for c in conditions if not c.ok]
    failures = [c for c in unmet if c.when_unmet == "failure"]
    approvals = [c for c in unmet if c.when_unmet == "action_required"]
    waits = [c for c in unmet if c.when_unmet == "in_progress" and c.pending_until is not None]
    ends = [c.pending_until for c in waits if c.pending_until is not None]
    recheck_at = min(ends, default=None)

    status: CheckStatus
    if failures:
        first = next((c for c in priority if not c.ok), failures[0])
        status, conclusion, title = "completed", "failure", _title(first, len(failures) - 1)
    elif approvals:
        status, conclusion = "completed", "action_required"
        title = _title(approvals[0], 0)
    elif waits:
        # The title says when the gate will pass: when the last running wait ends.
        last = next(c for c in waits if c.pending_until == max(ends))
        status, conclusion = "in_progress", None
        title = last.text[:1].upper() + last.text[1:]
    else:
        status, conclusion = "completed", "success"
        title = f"All {len(conditions)} conditions met"
    return Verdict(
        status=status,
        conclusion=conclusion,
        title=title,
        conditions=tuple(conditions),
        recheck_at=recheck_at,
        evaluated_at=now,
    )


def _title(condition: Condition, more: int) -> str:
    text = f"{condition.subject}: {condition.text}" if condition.subject else condition.text
    text = text[:1].upper() + text[1:]
    return f"{text} (+{more} more)" if more else text


def build_condition(finding: BuildFinding) -> Condition:
    if finding.kind == "pointer":
        return _pointer_condition(finding)
    subject = f"{finding.environment} {finding.kind}"
    where = f"`{finding.overlay or '.'}`"
    chart = finding.kind == "render"
    if finding.rendering_off:
        return Condition(ok=True, subject=subject, text=(
            f"{where} is not rendered: chart rendering is off (no helm), its values file is "
            "judged as a file" if chart else
            f"{where} is not built: rendering is off (no kustomize), its files are judged "
            "as files"))
    if finding.problem is not None:
        return Condition(ok=False, subject=subject,
                         text=f"{where} cannot be judged: {finding.problem}")
    verb = "renders" if chart else "builds"
    if not finding.changes:
        return Condition(ok=True, subject=subject,
                         text=f"{where} {verb} with every workload's image unchanged")
    return Condition(ok=True, subject=subject, text=(
        f"{where} changes {len(finding.changes)} workload image(s): "
        + "; ".join(finding.changes)))


def policy_conditions(gate: GateInput, *, approved: bool) -> list[Condition]:
    """What a change of the policy file does to gated environments: each environment's
    changed rules wait for the approvals of that environment's approvers (as the default
    branch's policy names them); a head policy that does not load fails."""
    if not gate.policy_changed:
        return []
    if gate.policy_problem is not None:
        return [Condition(ok=False, text=gate.policy_problem, subject=POLICY_PATH)]
    if not gate.policy_changes:
        return [Condition(ok=True, text="changes no rule of a gated environment",
                          subject=POLICY_PATH)]
    return [Condition(ok=approved, when_unmet="action_required",
                      subject=f"{POLICY_PATH} → {environment}",
                      text=f"changes {environment}'s rules, so {environment}'s approvers "
                           f"approve it: {'; '.join(texts)}")
            for environment, texts in gate.policy_changes.items()]


def _pointer_condition(finding: BuildFinding) -> Condition:
    subject = f"{finding.environment} pointer"
    what = finding.overlay
    if finding.problem is not None:
        return Condition(ok=False, subject=subject, text=f"{what} would now follow "
                                                         f"{finding.problem}")
    if finding.needs_approval:
        return Condition(ok=True, subject=subject, text=(
            f"{what} no longer syncs {finding.environment}: the change needs "
            f"{finding.environment}'s approvals"))
    text = f"{what} now follows {finding.follows}"
    if not finding.changes:
        return Condition(ok=True, subject=subject,
                         text=f"{text}, with every workload's image unchanged")
    return Condition(ok=True, subject=subject, text=(
        f"{text}: {len(finding.changes)} workload image(s) change: "
        + "; ".join(finding.changes)))


def _freeze_condition(environment: str, gate: GateInput) -> Condition:
    until = gate.freeze_until.get(environment)
    if until is None or until <= gate.now:
        return Condition(ok=True, text="no freeze window open", subject=environment)
    return Condition(
        ok=False,
        text=f"frozen until {format_time(until)}",
        pending_until=until,
        subject=environment,
        when_unmet="in_progress",
    )


def _hold_condition(gate: GateInput) -> Condition:
    if gate.held is None:
        return Condition(ok=True, text="not on hold")
    text = f"on hold: {gate.held}" if gate.held.strip() else "on hold"
    return Condition(ok=False, text=text, link=gate.hold_url)
