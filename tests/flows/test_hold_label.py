"""`conveyor/hold` removed by hand, over HTTP against the emulator: GitHub lets triage users
manage labels, but lifting a hold needs write permission (as `/unhold` does), so Conveyor puts
the label back and says why; a writer's removal stands."""

from __future__ import annotations

from tests.flows.test_commands import labels, production_pr, say
from tests.harness import World


async def test_a_hold_removed_without_write_permission_is_put_back(world: World) -> None:
    pr = await production_pr(world)
    await say(world, pr["number"], "/hold waiting for QA")
    assert "conveyor/hold" in labels(world, pr["number"])
    world.emulator.set_permission(world.repo, "tess", "triage")
    await world.emulator.remove_label(world.repo, pr["number"], "conveyor/hold", user="tess")
    await world.settle()
    assert "conveyor/hold" in labels(world, pr["number"])
    said = [c["body"] for c in world.emulator.comments(world.repo, pr["number"])
            if c["user"]["login"] == "conveyor[bot]"]
    assert said[-1] == ("⏸️ @tess removed `conveyor/hold` without write permission on the "
                        "repository, so the hold stays. Someone with write access lifts it "
                        "with `/unhold`.")
    assert world.gate(pr)["output"]["title"].startswith("On hold: waiting for QA")

    await world.emulator.remove_label(world.repo, pr["number"], "conveyor/hold", user="bob")
    await world.settle()
    assert "conveyor/hold" not in labels(world, pr["number"])  # bob maintains the repository
