"""The promotion gate's verdict over plain facts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.domain.gate.model import (
    NO_GATED_CHANGE,
    AttestationFinding,
    Condition,
    EnvironmentRules,
    Evidence,
    GateInput,
    ImageChange,
    Review,
    Verdict,
)
from bot.domain.gate.verdict import evaluate_gate
from bot.text import format_time

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
HEAD = "1" * 40
OLD = "0" * 40
DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


def change(**overrides: Any) -> ImageChange:
    fields: dict[str, Any] = {
        "service": "web",
        "environment": "production",
        "path": "apps/web/overlays/prod/kustomization.yaml",
        "line": 7,
        "image": "ghcr.io/acme/web",
        "new_tag": "1.4.2",
        "new_digest": DIGEST,
        "resolution_error": None,
        "allowed": True,
        "tag_admitted": True,
        "attestation": None,
    }
    fields.update(overrides)
    return ImageChange(**fields)


def rules(**overrides: Any) -> EnvironmentRules:
    fields: dict[str, Any] = {
        "name": "production",
        "after": ("staging",),
        "evidence": ("merged", "deployed"),
        "soak": timedelta(minutes=30),
        "approvals": 1,
        "allow_self_approval": False,
    }
    fields.update(overrides)
    return EnvironmentRules(**fields)


def evidence(
    kind: str,
    ago: timedelta = timedelta(hours=2),
    digest: str = DIGEST,
    environment: str | None = None,
) -> Evidence:
    return Evidence(
        kind=kind,
        digest=digest,
        at=NOW - ago,
        url=f"https://github.com/acme/deploy/{kind}/{digest[7:19]}",
        description=f"{kind} evidence",
        environment=environment,
    )


def review(
    user: str,
    state: str = "APPROVED",
    *,
    commit: str = HEAD,
    ago: timedelta = timedelta(minutes=1),
    bot: bool = False,
    approver: bool = True,
    approver_of: frozenset[str] = frozenset({"production", "dr"}),
) -> Review:
    return Review(
        user=user,
        state=state,
        commit_id=commit,
        submitted_at=NOW - ago,
        is_bot=bot,
        approver_of=approver_of if approver else frozenset(),
        url=f"https://github.com/acme/deploy/pull/5#review-{user}-{state}",
    )


def gate(**overrides: Any) -> GateInput:
    fields: dict[str, Any] = {
        "changes": (change(),),
        "rules": {"production": rules()},
        "evidence": {DIGEST: (evidence("merged"), evidence("deployed"))},
        "rollback": False,
        "reviews": (review("alice"),),
        "head_sha": HEAD,
        "pr_author": "conveyor-app[bot]",
        "requester": "bob",
        "held": None,
        "freeze_until": {},
        "now": NOW,
    }
    fields.update(overrides)
    return GateInput(**fields)


def unmet(verdict: Verdict) -> list[Condition]:
    return [c for c in verdict.conditions if not c.ok]


def texts(verdict: Verdict) -> list[str]:
    return [c.text for c in verdict.conditions]


# --- outcomes -------------------------------------------------------------------------------


def test_all_conditions_met_is_success() -> None:
    verdict = evaluate_gate(gate())
    assert (verdict.status, verdict.conclusion) == ("completed", "success")
    assert verdict.title == f"All {len(verdict.conditions)} conditions met"
    assert all(c.ok for c in verdict.conditions)
    assert verdict.recheck_at is None
    assert verdict.evaluated_at == NOW


def test_no_changes_is_the_no_gated_change_success() -> None:
    verdict = evaluate_gate(gate(changes=()))
    assert verdict == NO_GATED_CHANGE
    assert (verdict.status, verdict.conclusion) == ("completed", "success")
    assert verdict.title == "No gated environment changed"
    assert verdict.conditions == ()


FAILURES = [
    pytest.param(
        {"changes": (change(allowed=False, image="ghcr.io/evil/web"),)},
        "Web → production: ghcr.io/evil/web is not under allowed_images",
        id="not-allowed",
    ),
    pytest.param(
        {"changes": (change(new_digest=None, resolution_error="tag 1.4.2 resolves to no digest"),)},
        "Web → production: tag 1.4.2 resolves to no digest (+1 more)",
        id="tag-resolves-to-none",
    ),
    pytest.param(
        {"changes": (change(new_digest=None, resolution_error="tag 1.4.2 resolves to 2 digests"),)},
        "Web → production: tag 1.4.2 resolves to 2 digests (+1 more)",
        id="tag-resolves-to-two",
    ),
    pytest.param(
        {"changes": (change(new_digest=None),)},
        "Web → production: not pinned by a digest, and the tag resolves to none (+1 more)",
        id="unpinned-without-error",
    ),
    pytest.param(
        {"changes": (change(new_digest="sha256:abc"),)},
        "Web → production: 'sha256:abc' is not a digest (sha256: and 64 hex digits) (+1 more)",
        id="malformed-digest",
    ),
    pytest.param(
        {"changes": (change(new_digest="sha256:" + "A" * 64),)},
        "Web → production: 'sha256:"
        + "A" * 64
        + "' is not a digest (sha256: and 64 hex digits) (+1 more)",
        id="uppercase-digest",
    ),
    pytest.param(
        {"changes": (change(tag_admitted=False, new_tag="1.5.0"),)},
        "Web → production: version 1.5.0 is not admitted in production by its tags policy",
        id="tag-not-admitted",
    ),
    pytest.param(
        {"changes": (change(tag_admitted=False, new_tag=None),)},
        "Web → production: the version is not admitted in production by its tags policy",
        id="digest-only-not-admitted",
    ),
    pytest.param(
        {"changes": (change(attestation=AttestationFinding(
            False, "attestation names acme/other, not acme/web")),)},
        "Web → production: attestation names acme/other, not acme/web",
        id="attestation",
    ),
    pytest.param(
        {"evidence": {DIGEST: (evidence("deployed"),)}},
        f"Web → production: no merged evidence from staging for {DIGEST[:19]}",
        id="merged-missing",
    ),
    pytest.param(
        {"evidence": {DIGEST: (evidence("merged"),)}},
        f"Web → production: no deployed evidence from staging for {DIGEST[:19]}",
        id="deployed-missing",
    ),
    pytest.param(
        {"evidence": {}},
        f"Web → production: no merged evidence from staging for {DIGEST[:19]} (+1 more)",
        id="no-evidence",
    ),
    pytest.param(
        {"evidence": {DIGEST: (evidence("merged", digest=OTHER), evidence("deployed"))}},
        f"Web → production: no merged evidence from staging for {DIGEST[:19]}",
        id="evidence-for-another-digest",
    ),
    pytest.param(
        {
            "evidence": {
                DIGEST: (
                    evidence("merged", environment="qa"),
                    evidence("deployed", environment="qa"),
                )
            }
        },
        f"Web → production: no merged evidence from staging for {DIGEST[:19]} (+1 more)",
        id="evidence-from-another-environment",
    ),
    pytest.param(
        {"evidence": {DIGEST: (evidence("history"),)}},
        f"Web → production: no merged evidence from staging for {DIGEST[:19]} (+1 more)",
        id="history-without-rollback",
    ),
    pytest.param(
        {"changes": (change(environment="qa"),)},
        "Web → qa: qa has no gate rules in the policy",
        id="environment-without-rules",
    ),
    pytest.param(
        {"held": "waiting for the DB migration"},
        "On hold: waiting for the DB migration",
        id="held-with-reason",
    ),
    pytest.param({"held": ""}, "On hold", id="held-without-reason"),
    pytest.param({"held": "   "}, "On hold", id="held-blank-reason"),
    pytest.param(
        {"reviews": (review("alice"), review("carol", "CHANGES_REQUESTED"))},
        "Changes requested by @carol",
        id="changes-requested-by-approver",
    ),
]


@pytest.mark.parametrize(("overrides", "title"), FAILURES)
def test_failures(overrides: dict[str, Any], title: str) -> None:
    verdict = evaluate_gate(gate(**overrides))
    assert (verdict.status, verdict.conclusion) == ("completed", "failure")
    assert verdict.title == title
    assert unmet(verdict)


def test_an_unresolved_image_reports_that_evidence_cannot_be_looked_up() -> None:
    verdict = evaluate_gate(gate(changes=(change(new_digest=None, resolution_error="no"),)))
    assert [(c.ok, c.text) for c in verdict.conditions[:4]] == [
        (True, "ghcr.io/acme/web is under allowed_images"),
        (False, "no"),
        (True, "version 1.4.2 is admitted in production"),
        (False, "evidence from staging cannot be looked up without a digest"),
    ]
    assert not any("soak" in t for t in texts(verdict))


def test_an_unresolved_image_without_required_evidence_has_no_evidence_condition() -> None:
    verdict = evaluate_gate(
        gate(
            changes=(change(new_digest=None, resolution_error="no"),),
            rules={"production": rules(evidence=())},
        )
    )
    assert verdict.title == "Web → production: no"
    assert not any("evidence" in t for t in texts(verdict))


def test_missing_evidence_leaves_the_soak_waiting_without_a_time() -> None:
    verdict = evaluate_gate(gate(evidence={DIGEST: (evidence("merged"),)}))
    soak = next(c for c in verdict.conditions if "soak" in c.text)
    assert soak.text == "soak of 30m starts once all evidence exists"
    assert (soak.ok, soak.when_unmet, soak.pending_until) == (False, "in_progress", None)
    assert verdict.recheck_at is None


def test_hold_is_the_reported_blocker_before_other_failures() -> None:
    verdict = evaluate_gate(gate(held="incident", evidence={}, hold_url="https://x/hold"))
    assert verdict.title == "On hold: incident (+2 more)"
    hold = next(c for c in verdict.conditions if c.text == "on hold: incident")
    assert hold.link == "https://x/hold"
    assert hold.subject == ""


def test_changes_requested_is_reported_before_image_failures() -> None:
    verdict = evaluate_gate(
        gate(evidence={}, reviews=(review("carol", "CHANGES_REQUESTED"),)),
    )
    assert verdict.conclusion == "failure"
    assert verdict.title.startswith("Changes requested by @carol")


def test_only_approvals_missing_is_action_required() -> None:
    verdict = evaluate_gate(gate(reviews=()))
    assert (verdict.status, verdict.conclusion) == ("completed", "action_required")
    assert verdict.title == f"Needs 1 more approval from approvers (0 of 1) on {HEAD[:7]}"
    assert verdict.recheck_at is None


def test_failure_wins_over_missing_approvals() -> None:
    verdict = evaluate_gate(gate(reviews=(), changes=(change(allowed=False),)))
    assert verdict.conclusion == "failure"
    assert "allowed_images" in verdict.title


# --- soak -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("merged_ago", "deployed_ago", "expected"),
    [
        pytest.param(timedelta(hours=2), timedelta(hours=1), "success", id="long-soaked"),
        pytest.param(timedelta(hours=2), timedelta(minutes=30), "success", id="exactly-at-now"),
        pytest.param(
            timedelta(hours=2),
            timedelta(minutes=29, seconds=59),
            "in_progress",
            id="one-second-short",
        ),
        pytest.param(timedelta(minutes=10), timedelta(hours=2), "in_progress", id="merged-late"),
        pytest.param(timedelta(0), timedelta(0), "in_progress", id="just-now"),
    ],
)
def test_soak_counts_from_when_all_required_evidence_existed(
    merged_ago: timedelta, deployed_ago: timedelta, expected: str
) -> None:
    verdict = evaluate_gate(
        gate(
            evidence={DIGEST: (evidence("merged", merged_ago), evidence("deployed", deployed_ago))}
        )
    )
    if expected == "success":
        assert verdict.conclusion == "success"
        assert verdict.recheck_at is None
    else:
        ends = NOW - min(merged_ago, deployed_ago) + timedelta(minutes=30)
        assert (verdict.status, verdict.conclusion) == ("in_progress", None)
        assert verdict.title == f"Soaking until {format_time(ends)}"
        assert verdict.recheck_at == ends
        soak = next(c for c in verdict.conditions if c.pending_until)
        assert soak.when_unmet == "in_progress"


def test_soak_uses_the_earliest_evidence_of_each_kind() -> None:
    # deployed was reported twice: the earlier report started the soak.
    verdict = evaluate_gate(
        gate(
            evidence={
                DIGEST: (
                    evidence("merged", timedelta(hours=1)),
                    evidence("deployed", timedelta(minutes=5)),
                    evidence("deployed", timedelta(minutes=45)),
                )
            }
        )
    )
    assert verdict.conclusion == "success"
    assert f"soaked 30m since {format_time(NOW - timedelta(minutes=45))}" in texts(verdict)
    deployed = next(c for c in verdict.conditions if c.text.startswith("deployed"))
    assert deployed.link == evidence("deployed").url


def test_zero_soak_passes_on_fresh_evidence() -> None:
    verdict = evaluate_gate(
        gate(
            rules={"production": rules(soak=timedelta(0))},
            evidence={
                DIGEST: (evidence("merged", timedelta(0)), evidence("deployed", timedelta(0)))
            },
        )
    )
    assert verdict.conclusion == "success"
    assert not any("soak" in t for t in texts(verdict))


def test_no_required_evidence_has_no_soak() -> None:
    verdict = evaluate_gate(gate(rules={"production": rules(evidence=())}, evidence={}))
    assert verdict.conclusion == "success"
    assert not any("soak" in t or "evidence" in t for t in texts(verdict))


def test_only_required_kinds_are_checked() -> None:
    verdict = evaluate_gate(
        gate(
            rules={"production": rules(evidence=("merged",))},
            evidence={DIGEST: (evidence("merged"),)},
        )
    )
    assert verdict.conclusion == "success"
    assert not any(t.startswith("no deployed") for t in texts(verdict))


def test_evidence_from_the_upstream_environment_counts() -> None:
    verdict = evaluate_gate(
        gate(
            evidence={
                DIGEST: (
                    evidence("merged", environment="staging"),
                    evidence("deployed", environment="staging"),
                )
            }
        )
    )
    assert verdict.conclusion == "success"


def test_approvals_missing_while_soaking_reports_approvals_and_still_rechecks() -> None:
    verdict = evaluate_gate(
        gate(
            reviews=(),
            evidence={DIGEST: (evidence("merged", timedelta(minutes=10)), evidence("deployed"))},
        )
    )
    assert (verdict.status, verdict.conclusion) == ("completed", "action_required")
    assert verdict.title.startswith("Needs 1 more approval")
    assert verdict.recheck_at == NOW + timedelta(minutes=20)


def test_failure_while_soaking_still_rechecks_at_the_soak_end() -> None:
    verdict = evaluate_gate(
        gate(
            changes=(change(), change(service="api", image="ghcr.io/acme/api", new_digest=OTHER)),
            evidence={DIGEST: (evidence("merged", timedelta(minutes=10)), evidence("deployed"))},
        )
    )
    assert verdict.conclusion == "failure"
    assert verdict.title.startswith("Api → production: no merged evidence")
    assert verdict.recheck_at == NOW + timedelta(minutes=20)


# --- rollback -------------------------------------------------------------------------------


def test_rollback_history_satisfies_merged_and_deployed() -> None:
    verdict = evaluate_gate(
        gate(rollback=True, evidence={DIGEST: (evidence("history", timedelta(days=3)),)})
    )
    assert verdict.conclusion == "success"
    assert f"history in production at {format_time(NOW - timedelta(days=3))}: history evidence" in (
        texts(verdict)
    )


def test_rollback_history_must_be_from_the_environment_itself() -> None:
    verdict = evaluate_gate(
        gate(rollback=True, evidence={DIGEST: (evidence("history", environment="staging"),)})
    )
    assert verdict.conclusion == "failure"
    assert verdict.title.startswith(
        f"Web → production: no merged (or history) evidence from staging for {DIGEST[:19]}"
    )


def test_rollback_still_accepts_upstream_evidence() -> None:
    verdict = evaluate_gate(gate(rollback=True))
    assert verdict.conclusion == "success"


def test_rollback_soak_counts_from_the_earliest_history() -> None:
    verdict = evaluate_gate(
        gate(
            rollback=True,
            evidence={
                DIGEST: (
                    evidence("history", timedelta(minutes=5), environment="production"),
                    evidence("merged", timedelta(minutes=1)),
                )
            },
        )
    )
    assert verdict.status == "in_progress"
    assert verdict.recheck_at == NOW + timedelta(minutes=25)


# --- freeze ---------------------------------------------------------------------------------


def test_open_freeze_is_in_progress_until_it_closes() -> None:
    until = NOW + timedelta(days=2, hours=20)
    verdict = evaluate_gate(gate(freeze_until={"production": until}))
    assert (verdict.status, verdict.conclusion) == ("in_progress", None)
    assert verdict.title == f"Frozen until {format_time(until)}"
    assert verdict.recheck_at == until
    frozen = next(c for c in verdict.conditions if c.pending_until)
    assert frozen.subject == "production"


@pytest.mark.parametrize(
    "freeze_until",
    [
        pytest.param({}, id="no-freeze-configured"),
        pytest.param({"production": None}, id="no-window-open"),
        pytest.param({"production": NOW}, id="window-closes-now"),
        pytest.param({"staging": NOW + timedelta(hours=1)}, id="other-environment-frozen"),
    ],
)
def test_no_open_freeze_passes(freeze_until: dict[str, datetime | None]) -> None:
    verdict = evaluate_gate(gate(freeze_until=freeze_until))
    assert verdict.conclusion == "success"
    assert "no freeze window open" in texts(verdict)


def test_freeze_with_approvals_missing_is_action_required_and_rechecks_at_the_end() -> None:
    until = NOW + timedelta(hours=5)
    verdict = evaluate_gate(gate(freeze_until={"production": until}, reviews=()))
    assert verdict.conclusion == "action_required"
    assert verdict.recheck_at == until


@pytest.mark.parametrize(
    ("freeze_in", "title_prefix", "recheck_in"),
    [
        pytest.param(timedelta(hours=5), "Frozen until", timedelta(minutes=20), id="freeze-longer"),
        pytest.param(timedelta(minutes=5), "Soaking until", timedelta(minutes=5), id="soak-longer"),
    ],
)
def test_freeze_and_soak_title_says_when_it_passes(
    freeze_in: timedelta, title_prefix: str, recheck_in: timedelta
) -> None:
    verdict = evaluate_gate(
        gate(
            freeze_until={"production": NOW + freeze_in},
            evidence={DIGEST: (evidence("merged", timedelta(minutes=10)), evidence("deployed"))},
        )
    )
    assert verdict.status == "in_progress"
    passes = max(NOW + freeze_in, NOW + timedelta(minutes=20))
    assert verdict.title == f"{title_prefix} {format_time(passes)}"
    assert verdict.recheck_at == NOW + recheck_in


# --- approvals ------------------------------------------------------------------------------

H = timedelta(hours=1)
M = timedelta(minutes=1)

APPROVALS = [
    pytest.param((review("alice"),), True, id="approver-on-head"),
    pytest.param((review("alice", commit=OLD),), False, id="approval-of-an-earlier-commit"),
    pytest.param(
        (review("alice", commit=OLD, ago=H), review("alice", ago=M)), True, id="re-approved-head"
    ),
    pytest.param(
        (review("alice", ago=H), review("alice", "COMMENTED", ago=M)),
        True,
        id="comment-after-approval-keeps-it",
    ),
    pytest.param(
        (review("alice", ago=H), review("alice", "DISMISSED", ago=M)),
        False,
        id="dismissed-after-approval",
    ),
    pytest.param(
        (review("alice", "DISMISSED", ago=H), review("alice", ago=M)),
        True,
        id="approved-after-dismissal",
    ),
    pytest.param(
        (review("alice", "CHANGES_REQUESTED", ago=H), review("alice", ago=M)),
        True,
        id="approved-after-requesting-changes",
    ),
    pytest.param(
        # Out of order in the input: the later submission wins.
        (review("alice", ago=M), review("Alice", "CHANGES_REQUESTED", ago=H)),
        True,
        id="latest-by-time-not-by-position",
    ),
    pytest.param((review("conveyor-app[bot]"),), False, id="pr-author"),
    pytest.param((review("CONVEYOR-APP[BOT]", bot=False),), False, id="pr-author-case-insensitive"),
    pytest.param((review("ci", bot=True),), False, id="bot"),
    pytest.param((review("renovate[bot]", bot=False),), False, id="bot-by-name"),
    pytest.param((review("bob"),), False, id="requester"),
    pytest.param((review("BoB"),), False, id="requester-case-insensitive"),
    pytest.param((review("dave", approver=False),), False, id="not-an-approver"),
    pytest.param((review("alice", "COMMENTED"),), False, id="comment-only"),
    pytest.param((review("alice", "approved"),), True, id="webhook-lower-case-state"),
    pytest.param(
        (review("alice", ago=H), review("alice", "dismissed", ago=M)),
        False,
        id="webhook-lower-case-dismissal",
    ),
    pytest.param(
        (review("alice"), review("dave", "CHANGES_REQUESTED", approver=False)),
        True,
        id="changes-requested-by-non-approver-does-not-block",
    ),
]


@pytest.mark.parametrize(("reviews", "approved"), APPROVALS)
def test_approvals(reviews: tuple[Review, ...], approved: bool) -> None:
    verdict = evaluate_gate(gate(reviews=reviews))
    assert verdict.conclusion == ("success" if approved else "action_required")


@pytest.mark.parametrize(
    ("reviews", "note"),
    [
        pytest.param(
            (review("alice", commit=OLD),), "@alice (approved an earlier commit)", id="old"
        ),
        pytest.param(
            (review("Conveyor-App[bot]"),),
            "@Conveyor-App[bot] (author of the pull request)",
            id="author",
        ),
        pytest.param((review("ci", bot=True),), "@ci (a bot)", id="bot"),
        pytest.param(
            (review("dave", approver=False),), "@dave (not an approver)", id="non-approver"
        ),
        pytest.param((review("bob"),), "@bob (requested the promotion)", id="requester"),
    ],
)
def test_approvals_condition_says_why_an_approval_does_not_count(
    reviews: tuple[Review, ...], note: str
) -> None:
    verdict = evaluate_gate(gate(reviews=reviews))
    approvals = next(c for c in verdict.conditions if c.when_unmet == "action_required")
    assert approvals.text.endswith(f"; not counted: {note}")
    assert approvals.link is None


def test_counted_approvals_are_named_and_linked() -> None:
    verdict = evaluate_gate(gate(reviews=(review("alice"), review("erin"))))
    approvals = next(c for c in verdict.conditions if c.when_unmet == "action_required")
    assert approvals.text == f"2 of 1 required approvals on {HEAD[:7]}: @alice, @erin"
    assert approvals.link == review("alice").url


def test_self_approval_allowed_counts_the_requester() -> None:
    verdict = evaluate_gate(
        gate(rules={"production": rules(allow_self_approval=True)}, reviews=(review("bob"),))
    )
    assert verdict.conclusion == "success"


def test_self_approval_never_lets_the_author_approve() -> None:
    verdict = evaluate_gate(
        gate(
            rules={"production": rules(allow_self_approval=True)},
            pr_author="bob",
            reviews=(review("bob"),),
        )
    )
    assert verdict.conclusion == "action_required"


def test_without_a_requester_nobody_is_excluded_as_requester() -> None:
    verdict = evaluate_gate(gate(requester=None, reviews=(review("bob"),)))
    assert verdict.conclusion == "success"


def test_changes_requested_by_an_approver_on_an_earlier_commit_still_blocks() -> None:
    verdict = evaluate_gate(
        gate(reviews=(review("alice"), review("carol", "CHANGES_REQUESTED", commit=OLD)))
    )
    assert verdict.conclusion == "failure"
    blocker = next(c for c in verdict.conditions if c.text == "changes requested by @carol")
    assert blocker.link == review("carol", "CHANGES_REQUESTED").url


def test_changes_requested_in_lower_case_blocks() -> None:
    verdict = evaluate_gate(gate(reviews=(review("alice"), review("carol", "changes_requested"))))
    assert verdict.conclusion == "failure"


def test_changes_requested_then_comment_still_blocks() -> None:
    verdict = evaluate_gate(
        gate(
            reviews=(
                review("alice"),
                review("carol", "CHANGES_REQUESTED", ago=H),
                review("carol", "COMMENTED", ago=M),
            )
        )
    )
    assert verdict.conclusion == "failure"


def test_two_approvals_with_one_given_needs_one_more() -> None:
    verdict = evaluate_gate(gate(rules={"production": rules(approvals=2)}))
    assert verdict.conclusion == "action_required"
    assert verdict.title == f"Needs 1 more approval from approvers (1 of 2) on {HEAD[:7]}: @alice"


def test_three_missing_approvals_is_plural() -> None:
    verdict = evaluate_gate(gate(rules={"production": rules(approvals=3)}, reviews=()))
    assert verdict.title.startswith("Needs 3 more approvals from approvers (0 of 3)")


def test_zero_approvals_required() -> None:
    verdict = evaluate_gate(gate(rules={"production": rules(approvals=0)}, reviews=()))
    assert verdict.conclusion == "success"
    assert "no approvals required" in texts(verdict)


# --- several images and environments --------------------------------------------------------


def two_environments(**overrides: Any) -> GateInput:
    fields: dict[str, Any] = {
        "changes": (change(), change(environment="dr", path="apps/web/overlays/dr/k.yaml")),
        "rules": {
            "production": rules(),
            "dr": rules(name="dr", after=("staging",), approvals=2, allow_self_approval=True),
        },
    }
    fields.update(overrides)
    return gate(**fields)


def test_approvals_needed_is_the_maximum_over_changed_environments() -> None:
    assert evaluate_gate(two_environments()).conclusion == "action_required"
    verdict = evaluate_gate(two_environments(reviews=(review("alice"), review("erin"))))
    assert verdict.conclusion == "success"


def test_each_environment_counts_the_approvals_of_its_own_approvers() -> None:
    production, dr = frozenset({"production"}), frozenset({"dr"})
    verdict = evaluate_gate(two_environments(
        reviews=(review("alice", approver_of=production), review("erin", approver_of=dr))))
    assert verdict.conclusion == "action_required"
    assert verdict.title.startswith("Needs 1 more approval from approvers of dr (1 of 2)")
    verdict = evaluate_gate(two_environments(reviews=(
        review("alice", approver_of=production), review("erin", approver_of=dr),
        review("frank", approver_of=dr))))
    assert verdict.conclusion == "success"
    verdict = evaluate_gate(two_environments(reviews=(
        review("erin", approver_of=dr), review("frank", approver_of=dr))))
    assert verdict.title.startswith("Needs 1 more approval from approvers of production (0 of 1)")


def test_an_environment_asking_no_approval_does_not_narrow_who_counts() -> None:
    verdict = evaluate_gate(two_environments(
        rules={"production": rules(),
               "dr": rules(name="dr", after=("staging",), approvals=0)},
        reviews=(review("alice", approver_of=frozenset({"production"})),)))
    assert verdict.conclusion == "success"


def test_changes_requested_by_an_approver_of_either_environment_blocks() -> None:
    verdict = evaluate_gate(two_environments(reviews=(
        review("alice"), review("erin"),
        review("frank", "CHANGES_REQUESTED", approver_of=frozenset({"dr"})))))
    assert verdict.conclusion == "failure"
    assert "changes requested by @frank" in texts(verdict)


def test_self_approval_only_when_every_changed_environment_allows_it() -> None:
    verdict = evaluate_gate(two_environments(reviews=(review("alice"), review("bob"))))
    assert verdict.conclusion == "action_required"


def test_each_environment_gets_one_freeze_condition() -> None:
    verdict = evaluate_gate(
        two_environments(
            changes=(
                change(),
                change(service="api", image="ghcr.io/acme/api"),
                change(environment="dr"),
            ),
            reviews=(review("alice"), review("erin")),
        )
    )
    freezes = [c for c in verdict.conditions if c.text == "no freeze window open"]
    assert [c.subject for c in freezes] == ["production", "dr"]


def test_several_images_one_failing() -> None:
    verdict = evaluate_gate(
        gate(
            changes=(
                change(),
                change(service="api", image="ghcr.io/other/api", allowed=False),
                change(service="worker", image="ghcr.io/acme/worker"),
            )
        )
    )
    assert verdict.conclusion == "failure"
    assert verdict.title == "Api → production: ghcr.io/other/api is not under allowed_images"
    subjects = {c.subject for c in verdict.conditions}
    assert {"web → production", "api → production", "worker → production"} <= subjects
    assert [c.subject for c in unmet(verdict)] == ["api → production"]


def test_several_images_soak_rechecks_at_the_earliest_end_and_passes_at_the_latest() -> None:
    verdict = evaluate_gate(
        gate(
            changes=(change(), change(service="api", image="ghcr.io/acme/api", new_digest=OTHER)),
            evidence={
                DIGEST: (evidence("merged", timedelta(minutes=20)), evidence("deployed")),
                OTHER: (
                    evidence("merged", timedelta(minutes=5), OTHER),
                    evidence("deployed", digest=OTHER),
                ),
            },
        )
    )
    assert verdict.status == "in_progress"
    assert verdict.recheck_at == NOW + timedelta(minutes=10)
    assert verdict.title == f"Soaking until {format_time(NOW + timedelta(minutes=25))}"


def test_conditions_are_in_a_stable_order() -> None:
    verdict = evaluate_gate(gate())
    assert [(c.subject, c.text) for c in verdict.conditions] == [
        ("web → production", "ghcr.io/acme/web is under allowed_images"),
        ("web → production", f"pinned to {DIGEST[:19]}"),
        ("web → production", "version 1.4.2 is admitted in production"),
        ("web → production", f"merged in staging at {format_time(NOW - H * 2)}: merged evidence"),
        (
            "web → production",
            f"deployed in staging at {format_time(NOW - H * 2)}: deployed evidence",
        ),
        ("web → production", f"soaked 30m since {format_time(NOW - H * 2)}"),
        ("production", "no freeze window open"),
        ("", f"1 of 1 required approvals on {HEAD[:7]}: @alice"),
        ("", "not on hold"),
    ]


def test_evidence_without_url_has_no_link() -> None:
    bare = replace(evidence("merged"), url="")
    verdict = evaluate_gate(gate(evidence={DIGEST: (bare, evidence("deployed"))}))
    merged = next(c for c in verdict.conditions if c.text.startswith("merged"))
    assert merged.link is None


# --- helpers --------------------------------------------------------------------------------
