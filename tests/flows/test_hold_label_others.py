"""What Conveyor leaves alone when labels are removed by hand: another label, and a hold on a
pull request that is no longer open."""

from __future__ import annotations

from tests.flows.test_commands import labels, production_pr, say
from tests.harness import World


def bot_comments(world: World, number: int) -> list[str]:
    return [c["body"] for c in world.emulator.comments(world.repo, number)
            if c["user"]["login"] == "conveyor[bot]"]


async def test_another_label_removed_without_write_permission_stays_removed(
        world: World) -> None:
    pr = await production_pr(world)
    world.emulator.set_permission(world.repo, "tess", "triage")
    await world.emulator.add_labels(world.repo, pr["number"], ["needs-docs"], user="tess")
    await world.settle()
    said = bot_comments(world, pr["number"])
    await world.emulator.remove_label(world.repo, pr["number"], "needs-docs", user="tess")
    await world.settle()
    assert "needs-docs" not in labels(world, pr["number"])
    assert bot_comments(world, pr["number"]) == said


async def test_a_hold_removed_from_a_closed_pull_request_is_not_put_back(world: World) -> None:
    pr = await production_pr(world)
    await say(world, pr["number"], "/hold waiting for QA")
    await world.emulator.close_pull(world.repo, pr["number"], user="bob")
    await world.settle()
    world.emulator.set_permission(world.repo, "tess", "triage")
    said = bot_comments(world, pr["number"])
    assert "conveyor/hold" in labels(world, pr["number"])  # closing leaves the label
    await world.emulator.remove_label(world.repo, pr["number"], "conveyor/hold", user="tess")
    await world.settle()
    assert "conveyor/hold" not in labels(world, pr["number"])
    assert bot_comments(world, pr["number"]) == said
