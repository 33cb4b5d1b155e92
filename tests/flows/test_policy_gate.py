"""A pull request that changes the policy file is gated: the rules of every gated environment
it changes wait for that environment's approvers, as the default branch's policy names them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.names import POLICY_PATH
from bot.sandbox.demo import DEMO_POLICY
from tests.harness import World, close_world, hand_pr, make_world


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await make_world()
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def policy_pr(world: World, text: str | None, *, author: str = "alice") -> dict[str, Any]:
    if text is None:
        await world.emulator.push_files(world.repo, {POLICY_PATH: None}, branch="hand/policy",
                                        author=author, message="Remove the policy")
        await world.emulator.open_pull(world.repo, "hand/policy", title="Remove the policy",
                                       author=author)
        await world.settle()
        return world.pull("Remove the policy", state="open")
    return await hand_pr(world, POLICY_PATH, text, author=author, branch="hand/policy",
                         title="Change the policy")


def shown(run: dict[str, Any]) -> str:
    """The gate's summary as a reader sees it: Markdown's escapes taken out."""
    return str(run["output"]["summary"]).replace("\\", "")


LOOSER = (DEMO_POLICY.replace("    evidence: [merged, deployed]\n", "    evidence: [merged]\n")
          .replace("    soak: 30m\n", "")
          .replace("    deployed_context: argocd/{service}-{env}   # Argo CD labels its "
                   "statuses per Application\n    deployed_by: [\"argocd[bot]\"]\n", ""))


async def test_loosening_production_waits_for_productions_approvers(world: World) -> None:
    pr = await policy_pr(world, LOOSER)
    run = world.gate(pr)
    assert run["conclusion"] == "action_required", run["output"]
    summary = shown(run)
    assert "### .github/conveyor.yml → production" in summary
    for change in ("evidence: merged, deployed → merged", "soak: 30m → 0s",
                   "deployed_context: argocd/{service}-{env} → not set",
                   "deployed_by: argocd[bot] → none"):
        assert change in summary, summary
    assert "needs 1 more approval from approvers" in summary

    await world.emulator.review(world.repo, pr["number"], "carol", "APPROVE")  # not in @acme/sre
    await world.settle()
    summary = shown(world.gate(pr))
    assert world.gate(pr)["conclusion"] == "action_required"
    assert "@carol (not an approver)" in summary

    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "success", world.gate(pr)["output"]


async def test_an_approver_named_only_by_the_head_policy_does_not_count(world: World) -> None:
    head = DEMO_POLICY.replace('approvers: ["@acme/sre"]', 'approvers: ["@acme/sre", "carol"]')
    pr = await policy_pr(world, head)
    assert "approvers: @acme/sre → @acme/sre, carol" in shown(world.gate(pr))
    await world.emulator.review(world.repo, pr["number"], "carol", "APPROVE")
    await world.settle()
    run = world.gate(pr)
    assert run["conclusion"] == "action_required"
    assert "@carol (not an approver)" in shown(run)


async def test_a_staging_only_change_passes_without_approval(world: World) -> None:
    head = DEMO_POLICY.replace("    from: any\n    auto_merge: true\n", "    from: any\n")
    pr = await policy_pr(world, head.replace("# Conveyor policy", "# The policy"))
    run = world.gate(pr)
    assert run["conclusion"] == "success", run["output"]
    assert "changes no rule of a gated environment" in shown(run)


async def test_a_head_policy_that_does_not_load_fails_the_gate(world: World) -> None:
    pr = await policy_pr(world, DEMO_POLICY.replace("after: staging", "after: stagin"))
    run = world.gate(pr)
    assert run["conclusion"] == "failure", run["output"]
    assert "the policy at this pull request's head does not load" in shown(run)
    assert "unknown environment 'stagin'" in shown(run)
    config = world.emulator.check_runs(world.repo, pr["head"]["sha"], "conveyor/config-check")
    assert [c["conclusion"] for c in config] == ["failure"]


async def test_removing_the_policy_needs_productions_approvers(world: World) -> None:
    pr = await policy_pr(world, None)
    run = world.gate(pr)
    assert run["conclusion"] == "action_required", run["output"]
    assert "the policy file: present → removed: Conveyor stops gating this repository" in \
        shown(run)


WITH_DR = DEMO_POLICY.replace("groups:\n", """  - name: dr
    path: apps/{service}/overlays/dr/kustomization.yaml
    after: staging
    evidence: [merged]
    approvals: 1
    approvers: ["dave"]
groups:
""")


async def test_each_gated_environment_changed_waits_for_its_own_approvers(world: World) -> None:
    await world.emulator.push_files(world.repo, {POLICY_PATH: WITH_DR},
                                    message="Add the dr environment")
    await world.settle()
    pr = await policy_pr(world, WITH_DR.replace('["dave"]', '["dave", "erin"]').replace(
        "    soak: 30m\n", "    soak: 10m\n"))
    summary = shown(world.gate(pr))
    assert "### .github/conveyor.yml → production" in summary
    assert "### .github/conveyor.yml → dr" in summary

    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")  # @acme/sre only
    await world.settle()
    run = world.gate(pr)
    assert run["conclusion"] == "action_required", run["output"]
    assert "needs 1 more approval from approvers of dr (0 of 1)" in shown(run)

    await world.emulator.review(world.repo, pr["number"], "dave", "APPROVE")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "success", world.gate(pr)["output"]
