"""One round of the background reconciliation (bot/serving/tasks.py) against the emulator over HTTP:
it resyncs and logs what it did; when GitHub fails it logs that and waits for the next round
instead of ending the loop."""

from __future__ import annotations

import logging

import pytest

from bot.github.deliveries import Redeliverer
from bot.serving.tasks import reconcile_once
from tests.harness import World


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "bot.serving.tasks"]


async def test_a_round_resyncs_and_says_so(world: World,
                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.serving.tasks")
    await reconcile_once(world.conveyor, Redeliverer())
    assert messages(caplog) == ["resync done"]
    done = next(r for r in caplog.records if r.name == "bot.serving.tasks")
    assert (done.deployment_repos, done.redeliveries) == (1, 0)  # type: ignore[attr-defined]


async def test_a_round_that_github_fails_waits_for_the_next(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    world.emulator.faults.update({"error_rate": 1.0})  # every API request answered 502
    caplog.set_level(logging.WARNING, logger="bot.serving.tasks")
    try:
        await reconcile_once(world.conveyor, Redeliverer())
    finally:
        world.emulator.faults.reset()
    assert messages(caplog) == ["resync failed; next attempt at the next interval"]
