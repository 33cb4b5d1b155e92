"""Whether the default branch's required checks enforce the gate (pure)."""

from __future__ import annotations

from bot.domain.enforcement import BranchRules, RequiredCheck, judge_enforcement

GATE = "conveyor/promotion-gate"
OURS = 7


def judged(*checks: RequiredCheck) -> tuple[str, ...]:
    return judge_enforcement(BranchRules(checks), gate=GATE, app_id=OURS,
                             branch="main").findings


def advised(rules: BranchRules) -> tuple[str, ...]:
    return judge_enforcement(rules, gate=GATE, app_id=OURS, branch="main").advice


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
    assert judge_enforcement(BranchRules((RequiredCheck(GATE, None, "x"),)), gate=GATE,
                             app_id=None, branch="main").enforced is False


def test_advice_is_for_an_enforced_gate_alone_and_leaves_it_enforced() -> None:
    bare = BranchRules((RequiredCheck(GATE, OURS, "ruleset 3"),))
    found = judge_enforcement(bare, gate=GATE, app_id=OURS, branch="main")
    assert found.enforced and len(found.advice) == 2
    assert advised(BranchRules((RequiredCheck(GATE, None, "ruleset 3"),))) == ()
    assert advised(BranchRules((RequiredCheck("ci/lint", OURS, "ruleset 3", True),))) == ()


def test_what_a_ruleset_shows_is_said_as_missing_and_settled_by_it() -> None:
    [behind, last_push] = advised(BranchRules((RequiredCheck(GATE, OURS, "ruleset 3"),)))
    assert behind.startswith(f"No rule requiring `{GATE}` on `main` has \"Require branches "
                             "to be up to date before merging\"")
    assert behind.endswith("Turn it on in ruleset 3.")
    assert last_push.startswith("No rule on `main` has \"Require approval of the most recent "
                                "reviewable push\"")
    settled = BranchRules((RequiredCheck(GATE, OURS, "ruleset 3", up_to_date=True),),
                          last_push_approval=True)
    assert advised(settled) == ()


def test_up_to_date_counts_only_from_a_rule_that_requires_the_gate() -> None:
    [behind, _] = advised(BranchRules((RequiredCheck(GATE, OURS, "ruleset 3"),
                                       RequiredCheck("ci/lint", None, "ruleset 4", True))))
    assert "up to date" in behind and "ruleset 3." in behind
    [_] = advised(BranchRules((RequiredCheck(GATE, None, "ruleset 4", True),
                               RequiredCheck(GATE, OURS, "ruleset 3"))))


def test_where_branch_protection_applies_what_it_may_hold_is_said_unseen() -> None:
    only = BranchRules((RequiredCheck(GATE, OURS, "branch protection"),), protected=True)
    [behind, last_push] = advised(only)
    for line in (behind, last_push):
        assert line.startswith("Conveyor cannot see whether branch protection on `main` has")
        assert not line.startswith("No rule")
    assert behind.endswith(f"or turn it on in a ruleset that requires `{GATE}`.")
    both = BranchRules((RequiredCheck(GATE, OURS, "ruleset 3"),), protected=True,
                       last_push_approval=True)
    [behind] = advised(both)
    assert behind.startswith("Conveyor cannot see") and behind.endswith("in ruleset 3.")
