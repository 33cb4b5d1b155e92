"""The gate's conditions on one changed image reference: allowed, pinned, admitted by the tags
policy, attested, not reported failing, the evidence each environment asks for, the soak."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta

from bot.domain.durations import format_duration
from bot.domain.gate.model import (
    HISTORY,
    Condition,
    EnvironmentRules,
    Evidence,
    GateInput,
    ImageChange,
)
from bot.text import format_time, join_names, short_digest

DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


def change_conditions(change: ImageChange, gate: GateInput) -> list[Condition]:
    subject = f"{change.service} → {change.environment}"
    if not change.owned:
        subject = f"{change.image} in {subject}"
    if change.workload is not None:
        subject = f"{subject} ({change.workload})"

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
    if change.attestation is not None:
        found.append(condition(change.attestation.ok, change.attestation.text))

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
                text=f"evidence from {join_names(rules.after)} cannot be looked up without a "
                "digest",
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
        if mark.environment in rules.after or mark.environment in rules.ancestors
    ]
    # When all required evidence first existed: the latest of each (upstream, kind)'s earliest.
    started: datetime | None = None
    complete = True
    for upstream in rules.after:
        for kind in rules.evidence:
            earliest = _earliest(_matching(gate.evidence.get(digest, ()), kind, digest, change,
                                           upstream, rollback=gate.rollback))
            condition = _evidence_condition(change, kind, upstream, digest, earliest, gate,
                                            subject)
            if condition not in found:  # a rollback's history stands in for every upstream
                found.append(condition)
            if earliest is None:
                complete = False
            else:
                started = earliest.at if started is None else max(started, earliest.at)

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


def _evidence_condition(
    change: ImageChange,
    kind: str,
    upstream: str,
    digest: str,
    earliest: Evidence | None,
    gate: GateInput,
    subject: str,
) -> Condition:
    notes = (gate.evidence_notes if kind == "deployed" else gate.merged_notes).get(digest, ())
    seen = "".join(f"; {note}" for note in notes)
    if earliest is None:
        accepted = f"{kind} (or history)" if gate.rollback else kind
        return Condition(
            ok=False,
            text=f"no {accepted} evidence from {upstream} for {short_digest(digest)}{seen}",
            subject=subject,
        )
    where = change.environment if earliest.kind == HISTORY else upstream
    return Condition(
        ok=True,
        text=f"{earliest.kind} in {where} at {format_time(earliest.at)}: "
        f"{earliest.description}{seen}",
        link=earliest.url or None,
        subject=subject,
    )


def _matching(
    evidence: Iterable[Evidence],
    kind: str,
    digest: str,
    change: ImageChange,
    upstream: str,
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
            expected = upstream
        elif rollback and item.kind == HISTORY:
            expected = change.environment
        else:
            continue
        if item.environment is None or item.environment == expected:
            matching.append(item)
    return matching


def _earliest(evidence: list[Evidence]) -> Evidence | None:
    return min(evidence, key=lambda item: item.at, default=None)
