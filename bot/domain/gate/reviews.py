"""The gate's conditions on reviews: enough approvals from approvers on the head commit, and no
approver's request for changes standing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bot.domain.gate.model import Condition, EnvironmentRules, GateInput, Review


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


def approvals_condition(rules: list[EnvironmentRules], gate: GateInput) -> Condition:
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


def changes_requested(gate: GateInput) -> list[Condition]:
    # A request for changes stands across pushes until its author approves or it is dismissed,
    # as GitHub's own "changes requested" state does.
    return [
        Condition(ok=False, text=f"changes requested by @{review.user}", link=review.url)
        for review in _latest_reviews(gate.reviews).values()
        if review.state == "CHANGES_REQUESTED" and review.is_approver
    ]
