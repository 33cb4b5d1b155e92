"""Merges that GitHub refuses: bounded attempts, each checking the PR first; on a lasting
refusal one comment (edited, never repeated) says why and that `/recheck` tries again."""

from __future__ import annotations

import json
from typing import Any

from bot.promotion.opening.merger import MAX_ATTEMPTS, STOPPED_MARKER
from bot.promotion.resync.reconcile import resync_all
from tests.harness import World

MERGE = "/repos/{owner}/{repo}/pulls/{pull_number}/merge"


async def run_timers(world: World, rounds: int) -> None:
    for _ in range(rounds):
        world.clock.advance(seconds=16)
        world.conveyor.ctx.scheduler.fire_due()
        await world.settle()


def stopped_comments(world: World, number: int) -> list[dict[str, object]]:
    return [c for c in world.emulator.comments(world.repo, number)
            if str(c["body"]).startswith(STOPPED_MARKER)]


async def test_a_lasting_refusal_stops_with_one_comment_and_recheck_retries(
        rworld: World) -> None:
    world, emulator = rworld, rworld.emulator
    emulator.set_required_checks(world.repo, ["ci/lint"])  # a check that never reports
    await world.release("web", "1.4.2")
    pr = world.pull("Promote web 1.4.2 to staging")
    await run_timers(world, MAX_ATTEMPTS + 3)

    assert emulator.requests.count("PUT", MERGE) == MAX_ATTEMPTS
    assert not world.conveyor.ctx.scheduler.pending().get(f"merge:{world.repo}#{pr['number']}")
    [comment] = stopped_comments(world, pr["number"])
    text = str(comment["body"])
    assert "after 5 attempts" in text and '"ci/lint" is expected' in text
    assert "a required review or a required check is missing" in text
    assert "`/recheck`" in text

    # the resync tries the ungated auto-merge again: the comment is edited, not repeated
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    await run_timers(world, MAX_ATTEMPTS + 1)
    assert emulator.requests.count("PUT", MERGE) == 2 * MAX_ATTEMPTS
    assert len(stopped_comments(world, pr["number"])) == 1

    # the check passes; /recheck merges
    await emulator.set_status(world.repo, pr["head"]["sha"], "ci/lint", "success")
    await emulator.comment(world.repo, pr["number"], "alice", "/recheck")
    await world.settle()
    assert world.pull("Promote web 1.4.2 to staging")["merged"]


async def stopped_staging_promotion(world: World) -> tuple[dict[str, Any], int]:
    """A staging promotion whose merge Conveyor stopped trying (a required check that never
    reports), and the id of the comment that says so."""
    world.emulator.set_required_checks(world.repo, ["ci/lint"])
    await world.release("web", "1.4.2")
    pr = world.pull("Promote web 1.4.2 to staging")
    await run_timers(world, MAX_ATTEMPTS + 3)
    [comment] = stopped_comments(world, pr["number"])
    return pr, int(str(comment["id"]))


async def edit_stopped(world: World, comment_id: int, retry: dict[str, Any],
                       user: str = "alice") -> None:
    """A writer edits Conveyor's comment: GitHub lets anyone with write access do that."""
    await world.emulator.edit_comment(
        world.repo, comment_id, f"{STOPPED_MARKER} {json.dumps(retry)} -->\nedited", user=user)


async def test_an_edited_stopped_comment_does_not_merge_a_head_someone_pushed(
        rworld: World) -> None:
    world, emulator = rworld, rworld.emulator
    pr, comment_id = await stopped_staging_promotion(world)
    await emulator.push_files(world.repo, {"notes.md": "by alice\n"},
                              branch=pr["head"]["ref"], author="alice", message="mine")
    await world.settle()
    pushed = world.pull("Promote web 1.4.2 to staging")["head"]["sha"]
    await edit_stopped(world, comment_id, {"environment": "staging", "gated": False,
                                           "head": pushed, "method": "squash"})
    await emulator.set_status(world.repo, pushed, "ci/lint", "success", user="alice")
    before = emulator.requests.count("PUT", MERGE)
    await emulator.comment(world.repo, pr["number"], "alice", "/recheck")
    await world.settle()
    assert not world.pull("Promote web 1.4.2 to staging")["merged"]
    assert emulator.requests.count("PUT", MERGE) == before


async def test_recheck_merges_as_the_policy_says_whatever_the_stopped_comment_says(
        rworld: World) -> None:
    world, emulator = rworld, rworld.emulator
    pr, comment_id = await stopped_staging_promotion(world)
    head = pr["head"]["sha"]
    # staging is ungated and merges with `squash`: the comment's word on either is not read
    await edit_stopped(world, comment_id, {"environment": "staging", "gated": True,
                                           "head": head, "method": "merge"})
    await emulator.set_status(world.repo, head, "ci/lint", "success")
    await emulator.comment(world.repo, pr["number"], "alice", "/recheck")
    await world.settle()
    assert world.pull("Promote web 1.4.2 to staging")["merged"]
    assert len(emulator.commit(world.repo, "main")["parents"]) == 1  # squashed


async def test_a_pr_closed_meanwhile_is_left_alone(rworld: World) -> None:
    world, emulator = rworld, rworld.emulator
    emulator.set_required_checks(world.repo, ["ci/lint"])
    await world.release("web", "1.4.2")
    pr = world.pull("Promote web 1.4.2 to staging")
    await emulator.close_pull(world.repo, pr["number"], user="alice")
    await world.settle()
    before = emulator.requests.count("PUT", MERGE)
    await run_timers(world, MAX_ATTEMPTS + 1)
    assert emulator.requests.count("PUT", MERGE) == before + 1  # tried once, saw it closed
    assert stopped_comments(world, pr["number"]) == []
