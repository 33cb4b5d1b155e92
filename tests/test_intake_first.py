"""Jobs wait while deliveries keep arriving, and run in their pauses (no server)."""

from __future__ import annotations

import asyncio

from bot.queue import IntakeFirst


async def deliveries(intake: IntakeFirst, count: int, every: float) -> None:
    for _ in range(count):
        with intake.answering():
            pass
        await asyncio.sleep(every)


async def test_a_job_waits_until_deliveries_pause() -> None:
    intake = IntakeFirst(patience=30.0, gap=0.2)
    arriving = asyncio.create_task(deliveries(intake, 10, 0.02))
    await asyncio.sleep(0)
    job = asyncio.create_task(intake.wait())
    order: list[str] = []
    arriving.add_done_callback(lambda _: order.append("deliveries"))
    job.add_done_callback(lambda _: order.append("job"))
    await asyncio.wait_for(asyncio.gather(arriving, job), 10)
    assert order == ["deliveries", "job"]


async def test_a_job_does_not_wait_when_no_delivery_arrives() -> None:
    intake = IntakeFirst(patience=30.0, gap=30.0)
    await asyncio.wait_for(intake.wait(), 1)


async def test_under_a_flood_a_job_runs_after_its_patience() -> None:
    intake = IntakeFirst(patience=0.05, gap=30.0)
    with intake.answering():
        pass
    flood = asyncio.create_task(deliveries(intake, 1_000_000, 0.001))
    try:
        await asyncio.wait_for(intake.wait(), 10)
        assert not flood.done()
    finally:
        flood.cancel()

