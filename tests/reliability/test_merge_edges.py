"""Merges at their edges, over HTTP against the emulator: a human pushes to a promotion whose
merge is being retried, and a stopped-merge comment someone edited."""

from __future__ import annotations

from bot.promotion.opening.merger import STOPPED_MARKER, stopped_text
from tests.harness import World
from tests.reliability.test_merges import MERGE, run_timers, stopped_comments


async def test_a_push_to_a_promotion_being_retried_stops_its_merge(rworld: World) -> None:
    world, emulator = rworld, rworld.emulator
    emulator.set_required_checks(world.repo, ["ci/lint"])  # refused until ci/lint reports
    await world.release("web", "1.4.2")
    pr = world.pull("Promote web 1.4.2 to staging")
    assert emulator.requests.count("PUT", MERGE) == 1
    await emulator.push_files(world.repo, {"notes.md": "by hand\n"}, branch=pr["head"]["ref"],
                              author="alice", message="A change by hand")
    await world.settle()
    await emulator.set_status(world.repo, world.pull("Promote web")["head"]["sha"], "ci/lint",
                              "success")
    await run_timers(world, 3)
    # the retry names Conveyor's commit; GitHub refuses it (409): the PR is left to people
    assert emulator.requests.count("PUT", MERGE, status=409) == 1
    assert emulator.requests.count("PUT", MERGE) == 2
    assert not world.pull("Promote web 1.4.2 to staging")["merged"]
    assert stopped_comments(world, pr["number"]) == []


async def test_recheck_ignores_a_stopped_comment_it_cannot_read(rworld: World) -> None:
    world, emulator = rworld, rworld.emulator
    emulator.set_required_checks(world.repo, ["ci/lint"])
    await world.release("web", "1.4.2")
    pr = world.pull("Promote web 1.4.2 to staging")
    await run_timers(world, 8)
    [comment] = stopped_comments(world, pr["number"])
    # an admin edits Conveyor's comment: its retry record no longer reads as JSON
    await emulator.edit_comment(world.repo, int(comment["id"]),
                                f"{STOPPED_MARKER} {{broken -->\nedited", user="bob")
    await emulator.set_status(world.repo, pr["head"]["sha"], "ci/lint", "success")
    before = emulator.requests.count("PUT", MERGE)
    await emulator.comment(world.repo, pr["number"], "alice", "/recheck")
    await world.settle()
    assert emulator.requests.count("PUT", MERGE) == before
    assert not world.pull("Promote web 1.4.2 to staging")["merged"]


async def test_with_the_gate_required_an_entry_promotion_merges_at_the_first_try(
        rworld: World) -> None:
    """The gate is posted before the auto-merge: GitHub never refuses it for a missing
    required check, and no retry waits."""
    world, emulator = rworld, rworld.emulator
    emulator.set_required_checks(world.repo, ["conveyor/promotion-gate"])
    await world.release("web", "1.4.2")
    pr = world.pull("Promote web 1.4.2 to staging")
    assert pr["merged"]
    assert emulator.requests.count("PUT", MERGE) == 1
    assert emulator.requests.count("PUT", MERGE, status=405) == 0


def test_githubs_refusal_is_quoted_as_plain_text() -> None:
    """GitHub's message names checks and rules the repository's writers chose: quoted into a
    comment, it must not render as Markdown or mention anyone."""
    text = stopped_text('Required status check "*ci* [x](https://evil.example) @acme/sre" '
                        "is expected.", "blocked", 3)
    assert "\\*ci\\*" in text
    assert "\\[x\\]" in text
    assert "@acme/sre" not in text
