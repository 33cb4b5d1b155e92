"""A rollback that is itself reported failing, over HTTP against the emulator: it is marked,
and no second rollback goes back to the digest that failed before it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.flows.test_watch import (
    argo_reports,
    bot_comments,
    marks,
    policy,
    rollbacks,
    started,
    two_releases,
)
from tests.harness import World, close_world


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await started(policy())
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def test_a_failing_rollback_is_marked_and_not_rolled_back_again(world: World) -> None:
    old, _new, staging = await two_releases(world)
    world.clock.advance(minutes=10)
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    [rollback] = rollbacks(world)
    assert rollback["merged"]
    world.clock.advance(minutes=5)
    await argo_reports(world, rollback["merge_commit_sha"], "failure")
    assert len(rollbacks(world)) == 1  # no rollback of the rollback
    [mark] = marks(world, rollback)
    assert (mark["conclusion"], mark["external_id"]) == ("failure", old)
    [comment] = bot_comments(world, rollback["number"])
    assert ("No rollback is opened (the failing promotion is itself a rollback; going back "
            "again would return to the digest that failed before it)") in comment["body"]


async def test_a_failure_of_a_digest_no_longer_live_rolls_nothing_back(world: World) -> None:
    _old, _new, staging = await two_releases(world)
    await world.release("web", "1.2.0")  # staging moves on before the report arrives
    assert world.pull("Promote web 1.2.0 to staging")["merged"]
    world.clock.advance(minutes=10)
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    assert rollbacks(world) == []
    [mark] = marks(world, staging)
    assert mark["conclusion"] == "failure"
    [comment] = bot_comments(world, staging["number"])
    assert "No rollback is opened (the digest is no longer live)" in comment["body"]
