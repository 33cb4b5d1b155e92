"""The GitHub rate-limit state shared through a real redis-server: a wait told to one replica
holds the others, and the replicas of one installation share one content-creation budget."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")

from bot.domain.write_budget import WriteBudget
from bot.github.client import GitHubClients
from bot.github.ratelimit import RateLimiter
from bot.metrics import Metrics
from bot.redisq.client import Keys
from bot.redisq.ratelimit import RedisLimitStore
from bot.sandbox.demo import DEPLOY_REPO
from tests.harness import VirtualTime, close_world
from tests.reliability.support import SendJournal, build_world


async def test_a_hold_and_the_write_budget_are_shared(redis_client: Any) -> None:
    keys = Keys("{conveyor-test-limits}")
    timer = VirtualTime()
    first = RateLimiter(store=RedisLimitStore(redis_client, keys), timer=timer)
    second = RateLimiter(store=RedisLimitStore(redis_client, keys), timer=timer)
    await first.hold(7, 30)
    before = timer.now()
    await second.before(7, write=False)  # the other replica waits out the hold
    assert timer.now() - before >= 30
    await second.before(8, write=False)  # another installation is not held
    budget = WriteBudget(per_minute=3, per_hour=100, margin=1.0)
    assert [await limiter.store.reserve_write(9, timer.now(), budget)
            for limiter in (first, second, first)] == [0, 0, 0]
    assert await second.store.reserve_write(9, timer.now(), budget) == pytest.approx(61.0)
    # a window without a limit counts nothing: 3 a minute, any number an hour
    per_minute_only = WriteBudget(per_minute=3, per_hour=None, margin=1.0)
    assert [await first.store.reserve_write(10, timer.now() + 61 * i, per_minute_only)
            for i in range(40) for _ in range(3)] == [0] * 120
    # a hold is never shortened by a shorter one
    await first.hold(7, 100)
    await second.hold(7, 5)
    assert await first.store.held_until(7) == pytest.approx(timer.now() + 100)


async def test_two_replicas_keep_one_installation_inside_the_budget(
        redis_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two replicas (their own clients and limiters, one Redis) post 200 comments through the
    emulator: together never more than 80 a minute, so GitHub never refuses one."""
    world = await build_world()
    SendJournal(world, monkeypatch)
    # Virtual time stands still during a round trip to Redis too, as real time nearly does.
    reserve = RedisLimitStore.reserve_write

    async def reserve_in_flight(store: RedisLimitStore, *args: Any) -> float:
        world.time.in_flight += 1
        try:
            return await reserve(store, *args)
        finally:
            world.time.in_flight -= 1

    monkeypatch.setattr(RedisLimitStore, "reserve_write", reserve_in_flight)
    emulator, timer = world.emulator, world.time
    keys = Keys("{conveyor-test-replicas-limits}")
    replicas = [GitHubClients(api_url=emulator.base_url, app_id=str(emulator.app_id),
                              private_key=emulator.app_private_key_pem, metrics=Metrics(),
                              limits=RateLimiter(store=RedisLimitStore(redis_client, keys),
                                                 timer=timer))
                for _ in range(2)]
    try:
        issue = await emulator.open_issue(DEPLOY_REPO, "Shared budget", author="alice")
        url = f"/repos/{DEPLOY_REPO}/issues/{issue['number']}/comments"
        apis = [await r.installation(world.demo.installation_id) for r in replicas]
        started = timer.now()
        await asyncio.gather(*(apis[i % 2].post(url, data={"body": str(i)})
                               for i in range(200)))
        assert emulator.secondary.opened == []
        assert len(emulator.comments(DEPLOY_REPO, issue["number"])) == 200
        assert timer.now() - started >= 2 * 60  # 200 writes at 80 a minute
    finally:
        for r in replicas:
            await r.close()
        await close_world(world)
