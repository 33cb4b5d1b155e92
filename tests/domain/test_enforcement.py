"""Whether the default branch's required checks enforce the gate (pure)."""

from __future__ import annotations

from bot.domain.enforcement import RequiredCheck, judge_enforcement

GATE = "conveyor/promotion-gate"
OURS = 7


def judged(*checks: RequiredCheck) -> tuple[str, ...]:
    return judge_enforcement(checks, gate=GATE, app_id=OURS, branch="main").findings


def test_required_from_conveyor_anywhere_is_enforced_whatever_else_is_required() -> None:
    assert judged(RequiredCheck(GATE, OURS, "ruleset 3")) == ()
    assert judged(RequiredCheck(GATE, None, "branch protection"),
                  RequiredCheck(GATE, OURS, "ruleset 3")) == ()


def test_each_way_of_not_enforcing_is_named() -> None:
    [missing] = judged(RequiredCheck("ci/lint", None, "branch protection"))
    assert missing.startswith(f"`{GATE}` is not a required check on `main`")
    [anyone] = judged(RequiredCheck(GATE, None, "branch protection"),
                      RequiredCheck(GATE, 99, "ruleset 4"))
    assert "from any source (branch protection)" in anyone
    [other] = judged(RequiredCheck(GATE, 99, "ruleset 4"))
    assert "from another app (app 99 (ruleset 4))" in other
    assert judge_enforcement([RequiredCheck(GATE, None, "x")], gate=GATE, app_id=None,
                             branch="main").enforced is False
