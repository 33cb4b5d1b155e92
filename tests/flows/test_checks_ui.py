"""The checks UI and the merge queue, over HTTP against the emulator: "Re-run" on the gate (a
check run or its suite) evaluates it again, and a PR entering the merge queue gets its verdict
on the queue's commit."""

from __future__ import annotations

from tests.flows.test_gate import PROD, deploy_staging, staged
from tests.harness import World, hand_pr, pinned_kustomization

GATE = "conveyor/promotion-gate"


def evaluations(world: World) -> int:
    """The gate reads the PR as it is now each time it is evaluated."""
    return world.emulator.requests.count("GET", "/repos/{owner}/{repo}/pulls/{pull_number}")


def gate_writes(world: World) -> int:
    return world.emulator.requests.count("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}")


async def test_rerunning_the_gate_evaluates_it_again(world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    gate = world.gate(pr)
    assert gate["conclusion"] == "failure"
    before, written = evaluations(world), gate_writes(world)
    await world.emulator.rerequest_check_run(world.repo, gate["id"], user="alice")
    await world.settle()
    assert evaluations(world) == before + 1
    await world.emulator.request_check_run_action(world.repo, gate["id"], "recheck", user="alice")
    await world.settle()
    assert evaluations(world) == before + 2
    await world.emulator.rerequest_check_suite(world.repo, pr["head"]["sha"], user="alice")
    await world.settle()
    assert evaluations(world) == before + 3
    # nothing changed: the same verdict, not written again
    assert gate_writes(world) == written and world.gate(pr) == gate


async def test_a_pr_in_the_merge_queue_gets_its_verdict_on_the_queue_commit(
        world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await deploy_staging(world)
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    await world.settle()
    verdict = world.gate(pr)
    queued = await world.emulator.merge_group(world.repo, pr["number"])
    await world.settle()
    runs = world.emulator.check_runs(world.repo, queued, GATE)
    assert len(runs) == 1
    assert (runs[0]["conclusion"], runs[0]["output"]["title"]) == (
        verdict["conclusion"], verdict["output"]["title"])
