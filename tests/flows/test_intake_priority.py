"""Background work waits, at its next GitHub request, while webhook deliveries keep arriving:
the steps of a job between two requests run on the loop that answers them."""

from __future__ import annotations

import asyncio

from bot.sandbox.demo import DEPLOY_REPO
from tests.harness import World


async def test_a_request_waits_until_deliveries_pause(world: World) -> None:
    intake = world.conveyor.pool.intake
    intake.gap, intake.patience = 0.3, 30.0
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    before = len(world.emulator.requests.entries)
    with intake.answering():  # a delivery arrives
        pass
    read = asyncio.create_task(gh.getitem(f"/repos/{DEPLOY_REPO}"))
    await asyncio.sleep(0.05)
    assert not read.done() and len(world.emulator.requests.entries) == before
    repo = await asyncio.wait_for(read, 10)  # sent once no delivery came for 0.3 s
    assert repo["full_name"] == DEPLOY_REPO
    assert len(world.emulator.requests.entries) == before + 1


async def test_without_deliveries_a_request_goes_at_once(world: World) -> None:
    intake = world.conveyor.pool.intake
    intake.gap, intake.patience = 30.0, 30.0
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    repo = await asyncio.wait_for(gh.getitem(f"/repos/{DEPLOY_REPO}"), 10)
    assert repo["full_name"] == DEPLOY_REPO
