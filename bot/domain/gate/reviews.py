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
    asking = [r for r in rules if r.approvals > 0]
    # Several environments in one pull request: self-approval only where all allow it.
    self_approval = bool(rules) and all(r.allow_self_approval for r in rules)
    if not asking:
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
        elif not review.approver_of:
            reason = "not an approver"
        elif not self_approval and key == requester:
            reason = "requested the promotion"
        if reason is None:
            counted.append(review)
        else:
            ignored.append(f"@{review.user} ({reason})")

    # Each environment counts the approvals of its own approvers, once for the whole pull
    # request; the one furthest from its number speaks for all.
    tallies = [(r, [c for c in counted if r.name in c.approver_of]) for r in asking]
    rule, got = max(tallies, key=lambda tally: tally[0].approvals - len(tally[1]))
    needed = rule.approvals
    ok = len(got) >= needed
    whose = "" if all(g == got for _, g in tallies) else f" of {rule.name}"
    text = (
        f"{len(got)} of {needed} required approvals"
        if ok
        else f"needs {needed - len(got)} more approval"
        f"{'s' if needed - len(got) > 1 else ''} from approvers{whose} "
        f"({len(got)} of {needed})"
    )
    text += f" on {gate.head_sha[:7]}"
    if got:
        text += ": " + ", ".join(f"@{r.user}" for r in got)
    if ignored:
        text += "; not counted: " + ", ".join(ignored)
    return Condition(
        ok=ok,
        text=text,
        link=got[0].url if got else None,
        when_unmet="action_required",
    )


def changes_requested(gate: GateInput) -> list[Condition]:
    # A request for changes by an approver of any of the environments blocks. It stands
    # across pushes until its author approves or it is dismissed, as GitHub's own "changes
    # requested" state does.
    return [
        Condition(ok=False, text=f"changes requested by @{review.user}", link=review.url)
        for review in _latest_reviews(gate.reviews).values()
        if review.state == "CHANGES_REQUESTED" and review.approver_of
    ]
