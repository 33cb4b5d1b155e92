"""Stopping the workers ends every one of them, even one whose cancellation was lost."""

from __future__ import annotations

import asyncio

from bot.runtime.queue import cancel_until_done


async def swallows_one_cancellation(lost: asyncio.Event) -> None:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:  # as a lost one looks to its task: it goes on
        lost.set()
    await asyncio.sleep(60)


async def test_a_task_that_lost_its_cancellation_is_cancelled_again() -> None:
    lost = asyncio.Event()
    task = asyncio.create_task(swallows_one_cancellation(lost))
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_until_done([task], every=0.05), 10)
    assert lost.is_set() and task.cancelled()

