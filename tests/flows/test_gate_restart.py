"""A restarted bot finds the gate run it posted before and updates it: one gate run per
commit, even when the bot that posted it is gone."""

from __future__ import annotations

from bot.sandbox.stack import bot_settings, start_bot_for
from tests.harness import (
    FAST_RETRY,
    QUICK_REGISTRY,
    SECRET,
    World,
    hand_pr,
    pinned_kustomization,
)

PROD = "apps/web/overlays/prod/kustomization.yaml"


async def test_a_restarted_bot_updates_the_gate_run_it_posted_before(world: World) -> None:
    digest = await world.release("web", "1.0.0")
    assert world.pull("Promote web 1.0.0 to staging")["merged"]
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    before = world.gate(pr)
    assert before["conclusion"] == "failure" and "deployed" in before["output"]["summary"]

    await world.bot.stop()
    world.bot = await start_bot_for(world.emulator, bot_settings(world.emulator, SECRET),
                                    clock=world.clock, timer=world.time, retry=FAST_RETRY,
                                    registry_policy=QUICK_REGISTRY)
    head = world.emulator.commit(world.repo, "main")["sha"]
    await world.emulator.set_status(world.repo, head, "argocd/web-staging", "success")
    await world.settle()

    after = world.gate(pr)  # still exactly one run on the head commit
    assert after["id"] == before["id"]
    assert after["conclusion"] == "action_required", after["output"]


async def test_a_restarted_bot_leaves_a_gate_run_that_says_the_same_as_it_was(
        world: World) -> None:
    digest = await world.release("web", "1.0.0")
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    before = world.gate(pr)
    assert before["conclusion"] == "failure"

    await world.bot.stop()
    world.bot = await start_bot_for(world.emulator, bot_settings(world.emulator, SECRET),
                                    clock=world.clock, timer=world.time, retry=FAST_RETRY,
                                    registry_policy=QUICK_REGISTRY)
    world.clock.advance(minutes=10)  # the same verdict, reached later
    world.emulator.requests.reset()
    await world.emulator.comment(world.repo, pr["number"], "alice", "/recheck")
    await world.settle()
    gate_writes = [e for e in world.emulator.requests.entries
                   if e.method != "GET" and e.check_name == "conveyor/promotion-gate"]
    assert gate_writes == []  # the run found on the commit already says it
    assert world.gate(pr)["output"] == before["output"]

    await world.emulator.set_status(world.repo, world.emulator.commit(world.repo, "main")["sha"],
                                    "argocd/web-staging", "success")
    await world.settle()
    after = world.gate(pr)  # a new verdict is written, in the same run
    assert (after["id"], after["conclusion"]) == (before["id"], "action_required")
