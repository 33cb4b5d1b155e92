"""Jobs wait while deliveries keep arriving, and run in their pauses (no server)."""

from __future__ import annotations

import asyncio

from bot.runtime.queue import IntakeFirst


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



async def test_in_a_pause_the_waiting_steps_go_one_at_a_time_in_turn() -> None:
    intake = IntakeFirst(patience=30.0, gap=0.05, step=0.05)
    with intake.answering():
        pass
    order: list[int] = []

    async def step(number: int) -> None:
        await intake.wait()
        order.append(number)

    steps = [asyncio.create_task(step(n)) for n in range(3)]
    await asyncio.wait_for(steps[0], 10)
    assert order == [0]  # the others wait a step more each
    await asyncio.wait_for(asyncio.gather(*steps), 10)
    assert order == [0, 1, 2]


async def test_a_backlog_that_would_fill_the_queue_stops_the_waiting() -> None:
    backlog = [0]
    intake = IntakeFirst(patience=30.0, gap=30.0, backlog=lambda: backlog[0], most=100)
    with intake.answering():
        pass
    held = asyncio.create_task(intake.wait())
    await asyncio.sleep(0.05)
    assert not held.done()
    backlog[0] = 100
    await asyncio.wait_for(intake.wait(), 1)  # a new step goes at once
    held.cancel()
