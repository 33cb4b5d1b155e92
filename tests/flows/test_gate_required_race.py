"""A promotion merged as it opens where the default branch requires the gate from Conveyor's
app: the opener posts the gate before it merges, and when the evaluation its own `opened`
event started is running already, the opener waits for that verdict instead of merging ahead
of it (GitHub refuses a merge whose required check is not there yet)."""

from __future__ import annotations

from tests.flows.test_gate_enforcement import ruleset_this_app
from tests.harness import close_world, make_world

MERGE = "/repos/{owner}/{repo}/pulls/{pull_number}/merge"


async def test_a_promotion_merged_as_it_opens_merges_on_the_running_gate_verdict() -> None:
    world = await make_world()
    try:
        ruleset_this_app(world)
        # Every request takes a while: the `opened` event's job starts the PR's gate while the
        # opener is still labelling it, so the opener's own evaluation meets a running one.
        # (The staging values file is in the chart production renders: a full evaluation.)
        world.emulator.faults.latency = 0.2
        await world.release("api", "1.0.0")
        staging = world.pull("Promote api 1.0.0 to staging")
        assert staging["merged"]
        assert world.gate(staging)["conclusion"] == "success"
        assert world.emulator.requests.count("PUT", MERGE) == 1  # merged at the first try
        assert not any(key.startswith("merge:") for key in world.conveyor.ctx.scheduler.pending())
        assert world.emulator.violations == []
    finally:
        await close_world(world)
