"""The verdict of the check run ``conveyor/promotion-gate``, as a pure function.

The I/O layer gathers the facts (which image references the pull request changes in gated
files, the evidence found upstream for each digest, the reviews, hold and freeze state) into a
:class:`GateInput`; :func:`evaluate_gate` turns them into a :class:`Verdict` without touching
GitHub, so every rule is testable on plain values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from bot.domain.durations import format_duration
from bot.text import format_time, short_digest

__all__ = [
    "EVIDENCE_KINDS",
    "NO_GATED_CHANGE",
    "Condition",
    "EnvironmentRules",
    "Evidence",
    "FailureMark",
    "FileProblem",
    "GateInput",
    "ImageChange",
    "Review",
    "Verdict",
    "evaluate_gate",
]

EVIDENCE_KINDS = ("merged", "deployed")
HISTORY = "history"

DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")

Outcome = Literal["failure", "action_required", "in_progress"]
CheckStatus = Literal["completed", "in_progress"]  # a check run's `status` while the bot sets it


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence that a digest reached an environment."""

    kind: str  # "merged" | "deployed" | "history" (it was live in this environment before)
    digest: str
    at: datetime  # aware
    url: str
    description: str
    # The environment the evidence was observed in. None means "gathered for the right
    # environment" (the I/O layer already filtered); when set it must be the gated
    # environment's upstream (`after`) for merged/deployed, and the environment itself for
    # history, so that evidence from an unrelated environment never satisfies a gate.
    environment: str | None = None
    # The canonical image name the evidence is about; None means "the change's own image".
    # The same digest under another name is another image: references compare by full name
    # and digest (docs/security.md).
    image: str | None = None


@dataclass(frozen=True)
class FailureMark:
    """Conveyor's own record that a trusted report said the digest failed in an environment
    within its ``watch`` (only Conveyor can write it: a check run of its app)."""

    digest: str
    environment: str
    at: datetime  # when the failure was reported
    url: str  # the report, or the mark when the report has no page


@dataclass(frozen=True)
class ImageChange:
    """One image reference the pull request changes in a gated file.

    ``service`` and ``environment`` name the file's owner in the policy; ``owned`` is false
    for an image that is not that service's own (a sidecar, another registry's image).
    ``canonical`` is the comparable name the evidence must be about. ``tags_text`` replaces
    the default wording of the tags condition (the I/O layer names the registry's versions).
    """

    service: str
    environment: str
    path: str
    line: int
    image: str
    new_tag: str | None
    new_digest: str | None
    resolution_error: str | None
    allowed: bool
    tag_admitted: bool
    attestation_problem: str | None = None
    owned: bool = True
    canonical: str | None = None
    tags_text: str | None = None


@dataclass(frozen=True)
class FileProblem:
    """A gated file the gate cannot judge (deleted, renamed, unreadable, unlisted...)."""

    environment: str
    path: str
    reason: str


@dataclass(frozen=True)
class EnvironmentRules:
    """A gated environment's rules from the policy, as plain values."""

    name: str
    after: str
    evidence: tuple[str, ...]
    soak: timedelta
    approvals: int
    allow_self_approval: bool = False
    # the environments further up the chain than `after` (its own `after`, and so on): a digest
    # reported failing in any of them is refused here too
    earlier: tuple[str, ...] = ()


@dataclass(frozen=True)
class Review:
    """A pull request review.

    ``is_approver`` is decided by the I/O layer; when the pull request changes several gated
    environments it must mean "listed approver of every one of them".
    """

    user: str
    state: str  # "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED"
    commit_id: str
    submitted_at: datetime
    is_bot: bool
    is_approver: bool
    url: str


@dataclass(frozen=True)
class GateInput:
    changes: tuple[ImageChange, ...]
    rules: Mapping[str, EnvironmentRules]
    evidence: Mapping[str, tuple[Evidence, ...]]  # by digest
    rollback: bool
    reviews: tuple[Review, ...]
    head_sha: str
    pr_author: str
    requester: str | None  # who asked for the promotion (/promote author, release author)
    held: str | None  # hold reason ("" without one), None when not held
    freeze_until: Mapping[str, datetime | None]  # env -> end of the open freeze window
    now: datetime
    hold_url: str | None = None
    # by digest: what the deployed search saw besides evidence (a newer failure, ignored
    # reports and whose), shown on the digest's deployed condition
    evidence_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[FileProblem, ...] = ()
    failures: Mapping[str, tuple[FailureMark, ...]] = field(default_factory=dict)  # by digest


@dataclass(frozen=True)
class Condition:
    """One line of the gate's checklist.

    ``subject`` names what the condition is about ("web → production" for an image change,
    "production" for an environment, "" for the pull request as a whole); ``when_unmet`` is the
    outcome the condition forces while ``ok`` is false; ``pending_until`` is when a running
    soak or freeze window ends.
    """

    ok: bool
    text: str
    link: str | None = None
    pending_until: datetime | None = None
    subject: str = ""
    when_unmet: Outcome = "failure"


@dataclass(frozen=True)
class Verdict:
    status: CheckStatus
    conclusion: str | None  # "success" | "failure" | "action_required"; None while in progress
    title: str
    conditions: tuple[Condition, ...]
    recheck_at: datetime | None
    evaluated_at: datetime | None = None


NO_GATED_CHANGE = Verdict(
    status="completed",
    conclusion="success",
    title="No gated environment changed",
    conditions=(),
    recheck_at=None,
)


def evaluate_gate(gate: GateInput) -> Verdict:
    """The verdict of the gate on the facts in ``gate``, deterministic and without I/O.

    Every condition is listed, met or not. An unmet condition that fails makes the verdict
    ``failure``; else missing approvals make it ``action_required``; else a running wait (soak,
    freeze) keeps it ``in_progress``, to be evaluated again at ``recheck_at`` (when the first
    wait ends); else it is ``success``. No gated change and no file problem gives
    :data:`NO_GATED_CHANGE`.
    """
    if not gate.changes and not gate.problems:
        return NO_GATED_CHANGE

    conditions: list[Condition] = [
        Condition(ok=False, text=problem.reason, subject=f"{problem.path} ({problem.environment})")
        for problem in gate.problems
    ]
    for change in gate.changes:
        conditions.extend(_change_conditions(change, gate))

    environments = list(dict.fromkeys(
        [change.environment for change in gate.changes]
        + [problem.environment for problem in gate.problems]))
    conditions.extend(_freeze_condition(environment, gate) for environment in environments)

    known_rules = [gate.rules[env] for env in environments if env in gate.rules]
    blocking_reviews = _changes_requested(gate)
    hold = _hold_condition(gate)
    conditions.append(_approvals_condition(known_rules, gate))
    conditions.extend(blocking_reviews)
    conditions.append(hold)
    return _verdict(conditions, priority=[hold, *blocking_reviews], now=gate.now)


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


def _change_conditions(change: ImageChange, gate: GateInput) -> list[Condition]:
    subject = f"{change.service} → {change.environment}"
    if not change.owned:
        subject = f"{change.image} in {subject}"

    def condition(ok: bool, text: str) -> Condition:
        return Condition(ok=ok, text=text, subject=subject)

    found: list[Condition] = [
        condition(
            change.allowed,
            f"{change.image} is under allowed_images"
            if change.allowed
            else f"{change.image} is not under allowed_images",
        )
    ]

    digest = change.new_digest
    if change.resolution_error is not None:
        found.append(condition(False, change.resolution_error))
        digest = None
    elif digest is None:
        found.append(condition(False, "not pinned by a digest, and the tag resolves to none"))
    elif not DIGEST_RE.fullmatch(digest):
        found.append(condition(False, f"{digest!r} is not a digest (sha256: and 64 hex digits)"))
        digest = None
    else:
        found.append(condition(True, f"pinned to {short_digest(digest)}"))

    version = f"version {change.new_tag}" if change.new_tag else "the version"
    found.append(
        condition(
            change.tag_admitted,
            change.tags_text
            or (
                f"{version} is admitted in {change.environment}"
                if change.tag_admitted
                else f"{version} is not admitted in {change.environment} by its tags policy"
            ),
        )
    )
    if change.attestation_problem is not None:
        found.append(condition(False, change.attestation_problem))

    rules = gate.rules.get(change.environment)
    if rules is None:
        found.append(condition(False, f"{change.environment} has no gate rules in the policy"))
        return found
    found.extend(_evidence_conditions(change, rules, digest, gate, subject))
    return found


def _evidence_conditions(
    change: ImageChange,
    rules: EnvironmentRules,
    digest: str | None,
    gate: GateInput,
    subject: str,
) -> list[Condition]:
    if digest is None:
        if not rules.evidence:
            return []
        return [
            Condition(
                ok=False,
                text=f"evidence from {rules.after} cannot be looked up without a digest",
                subject=subject,
            )
        ]
    found: list[Condition] = [
        Condition(
            ok=False,
            text=f"{short_digest(digest)} was reported failing in {mark.environment} at "
            f"{format_time(mark.at)}",
            link=mark.url or None,
            subject=subject,
        )
        for mark in gate.failures.get(digest, ())
        if mark.environment == rules.after or mark.environment in rules.earlier
    ]
    # When all required evidence first existed: the latest of each kind's earliest evidence.
    started: datetime | None = None
    complete = True
    for kind in rules.evidence:
        accepted = f"{kind} (or history)" if gate.rollback else kind
        earliest = _earliest(
            _matching(
                gate.evidence.get(digest, ()), kind, digest, change, rules, rollback=gate.rollback
            )
        )
        notes = gate.evidence_notes.get(digest, ()) if kind == "deployed" else ()
        seen = "".join(f"; {note}" for note in notes)
        if earliest is None:
            complete = False
            found.append(
                Condition(
                    ok=False,
                    text=f"no {accepted} evidence from {rules.after} for {short_digest(digest)}"
                    + seen,
                    subject=subject,
                )
            )
            continue
        started = earliest.at if started is None else max(started, earliest.at)
        where = change.environment if earliest.kind == HISTORY else rules.after
        found.append(
            Condition(
                ok=True,
                text=f"{earliest.kind} in {where} at {format_time(earliest.at)}: "
                f"{earliest.description}{seen}",
                link=earliest.url or None,
                subject=subject,
            )
        )

    if rules.soak <= timedelta(0) or not rules.evidence:
        return found
    soak = format_duration(rules.soak)
    if not complete or started is None:
        found.append(
            Condition(
                ok=False,
                text=f"soak of {soak} starts once all evidence exists",
                subject=subject,
                # A consequence of the missing evidence, reported as a wait, not a second failure.
                when_unmet="in_progress",
            )
        )
        return found
    ends = started + rules.soak
    if ends <= gate.now:
        found.append(
            Condition(
                ok=True,
                text=f"soaked {soak} since {format_time(started)}",
                subject=subject,
            )
        )
    else:
        found.append(
            Condition(
                ok=False,
                text=f"soaking until {format_time(ends)}",
                pending_until=ends,
                subject=subject,
                when_unmet="in_progress",
            )
        )
    return found


def _matching(
    evidence: Iterable[Evidence],
    kind: str,
    digest: str,
    change: ImageChange,
    rules: EnvironmentRules,
    *,
    rollback: bool,
) -> list[Evidence]:
    matching = []
    for item in evidence:
        if item.digest != digest:
            continue
        if None not in (item.image, change.canonical) and item.image != change.canonical:
            continue
        if item.kind == kind:
            expected = rules.after
        elif rollback and item.kind == HISTORY:
            expected = change.environment
        else:
            continue
        if item.environment is None or item.environment == expected:
            matching.append(item)
    return matching


def _earliest(evidence: list[Evidence]) -> Evidence | None:
    return min(evidence, key=lambda item: item.at, default=None)


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


def _latest_reviews(reviews: Iterable[Review]) -> dict[str, Review]:
    """Each user's latest review that states a position.

    As on GitHub, a COMMENTED review neither grants nor withdraws an approval, so it is not
    "the latest review" of a user who approved or requested changes before. States are
    upper-cased: the REST API says "APPROVED", webhook payloads say "approved".
    """
    latest: dict[str, Review] = {}
    for review in sorted(reviews, key=lambda r: r.submitted_at):
        state = review.state.upper()
        if state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[review.user.casefold()] = replace(review, state=state)
    return latest


def _is_bot(review: Review) -> bool:
    return review.is_bot or review.user.endswith("[bot]")


def _approvals_condition(rules: list[EnvironmentRules], gate: GateInput) -> Condition:
    needed = max((r.approvals for r in rules), default=0)
    # Several environments in one pull request: the strictest rule wins.
    self_approval = bool(rules) and all(r.allow_self_approval for r in rules)
    if needed <= 0:
        return Condition(ok=True, text="no approvals required", when_unmet="action_required")

    author = gate.pr_author.casefold()
    requester = gate.requester.casefold() if gate.requester else None
    counted: list[Review] = []
    ignored: list[str] = []
    for key, review in _latest_reviews(gate.reviews).items():
        if review.state != "APPROVED":
            continue
        reason = None
        if review.commit_id != gate.head_sha:
            reason = "approved an earlier commit"
        elif key == author:
            reason = "author of the pull request"
        elif _is_bot(review):
            reason = "a bot"
        elif not review.is_approver:
            reason = "not an approver"
        elif not self_approval and key == requester:
            reason = "requested the promotion"
        if reason is None:
            counted.append(review)
        else:
            ignored.append(f"@{review.user} ({reason})")

    ok = len(counted) >= needed
    text = (
        f"{len(counted)} of {needed} required approvals"
        if ok
        else f"needs {needed - len(counted)} more approval"
        f"{'s' if needed - len(counted) > 1 else ''} from approvers "
        f"({len(counted)} of {needed})"
    )
    text += f" on {gate.head_sha[:7]}"
    if counted:
        text += ": " + ", ".join(f"@{r.user}" for r in counted)
    if ignored:
        text += "; not counted: " + ", ".join(ignored)
    return Condition(
        ok=ok,
        text=text,
        link=counted[0].url if counted else None,
        when_unmet="action_required",
    )


def _changes_requested(gate: GateInput) -> list[Condition]:
    # A request for changes stands across pushes until its author approves or it is dismissed,
    # as GitHub's own "changes requested" state does.
    return [
        Condition(ok=False, text=f"changes requested by @{review.user}", link=review.url)
        for review in _latest_reviews(gate.reviews).values()
        if review.state == "CHANGES_REQUESTED" and review.is_approver
    ]


def _hold_condition(gate: GateInput) -> Condition:
    if gate.held is None:
        return Condition(ok=True, text="not on hold")
    text = f"on hold: {gate.held}" if gate.held.strip() else "on hold"
    return Condition(ok=False, text=text, link=gate.hold_url)
