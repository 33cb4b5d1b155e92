"""The in-process repository locks (bot/queue.KeyedLocks): one holder per repository at a time,
whatever the case of its name, and no lock kept once nobody holds or waits for it."""

from __future__ import annotations

import asyncio

from bot.runtime.queue import KeyedLocks


async def test_one_holder_per_repository_and_nothing_kept_after() -> None:
    locks = KeyedLocks()
    order: list[str] = []
    release = {name: asyncio.Event() for name in ("first", "second", "other")}

    async def work(key: str, name: str) -> None:
        async with locks.hold(key):
            order.append(f"{name} in")
            await release[name].wait()
            order.append(f"{name} out")

    first = asyncio.create_task(work("acme/deploy", "first"))
    await asyncio.sleep(0)
    second = asyncio.create_task(work("ACME/Deploy", "second"))  # the same repository
    other = asyncio.create_task(work("acme/other", "other"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == ["first in", "other in"]  # another repository does not wait
    assert len(locks) == 2  # one lock per repository; the waiter shares it
    release["other"].set()
    await other
    assert len(locks) == 1
    release["second"].set()
    release["first"].set()
    await asyncio.gather(first, second)
    assert order == ["first in", "other in", "other out", "first out", "second in", "second out"]
    assert len(locks) == 0


async def test_a_holder_that_fails_releases_the_lock() -> None:
    locks = KeyedLocks()
    try:
        async with locks.hold("acme/deploy"):
            raise RuntimeError("the job failed")
    except RuntimeError:
        pass
    assert len(locks) == 0
    async with locks.hold("acme/deploy"):
        assert len(locks) == 1
