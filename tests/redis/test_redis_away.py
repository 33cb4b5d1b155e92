"""Locks, leases and the shared rate-limit state on a real redis-server that goes away: a
replica waits for a lock only so long, skips a lease, and keeps its own rate-limit state."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")

from bot.domain.write_budget import WriteBudget
from bot.metrics import Metrics
from bot.redisq import RedisLocks, RedisQueue, RedisScheduler
from bot.redisq.client import Keys
from bot.redisq.locks import LockUnavailable
from bot.redisq.ratelimit import RedisLimitStore
from bot.runtime.timer_jobs import DashboardDue, GateRecheck
from tests.redis.support import RedisServer


async def test_a_lock_held_elsewhere_is_waited_for_only_so_long(redis_client: Any) -> None:
    keys = Keys("{conveyor-test-held}")
    holder = RedisLocks(redis_client, keys=keys, ttl=5)
    waiter = RedisLocks(redis_client, keys=keys, ttl=5, wait_limit=0.3, poll=0.02)
    async with holder.hold("acme/deploy"):
        with pytest.raises(LockUnavailable) as refused:
            await waiter.acquire("ACME/deploy")
        assert str(refused.value) == "lock acme/deploy held elsewhere for 0 s"
        async with waiter.lease("acme/deploy", keep_for=0) as mine:
            assert mine is False
    lease = await waiter.acquire("acme/deploy")
    assert await waiter.release(lease) is True
    assert await waiter.release(lease) is False  # a stale owner releases nothing


async def test_a_lock_whose_lease_expired_while_held_is_reported_lost(
        redis_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    keys = Keys("{conveyor-test-lost}")
    locks = RedisLocks(redis_client, keys=keys, ttl=0.3)
    caplog.set_level(logging.ERROR, logger="bot.redisq.locks")
    async with locks.hold("acme/deploy"):
        await redis_client.delete(keys.lock("acme/deploy"))  # expired, say, during a pause
        await asyncio.sleep(0.25)
    assert [r.getMessage() for r in caplog.records] == [
        "repository lock lost (expired while held); another replica may work on it too"]


async def test_without_redis_locks_give_up_and_leases_are_skipped(
        redis_server: RedisServer, redis_client: Any) -> None:
    locks = RedisLocks(redis_client, keys=Keys("{conveyor-test-away-locks}"), wait_limit=0.1)
    redis_server.stop()
    with pytest.raises(LockUnavailable) as refused:
        await locks.acquire("acme/deploy")
    assert str(refused.value).startswith("lock acme/deploy: ")
    async with locks.lease("resync", keep_for=10) as mine:
        assert mine is False


async def test_a_held_lock_survives_redis_going_away_for_a_while(
        redis_server: RedisServer, redis_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    locks = RedisLocks(redis_client, keys=Keys("{conveyor-test-away-held}"), ttl=0.3)
    caplog.set_level(logging.WARNING, logger="bot.redisq.locks")
    async with locks.hold("acme/deploy"):
        redis_server.stop()
        for _ in range(100):  # until a renewal has failed
            if caplog.records:
                break
            await asyncio.sleep(0.05)
    assert "could not renew a repository lock" in [r.getMessage() for r in caplog.records]


async def test_without_redis_the_rate_limit_state_is_this_replicas_own(
        redis_server: RedisServer, redis_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    store = RedisLimitStore(redis_client, Keys("{conveyor-test-away-limits}"))
    await store.hold(7, 1000.0)
    assert await store.held_until(7) == 1000.0
    redis_server.stop()
    caplog.set_level(logging.WARNING, logger="bot.redisq.ratelimit")
    await store.hold(7, 2000.0)  # kept here, not shared
    assert await store.held_until(7) == 2000.0
    budget = WriteBudget(per_minute=2, per_hour=10, margin=0)
    assert [await store.reserve_write(7, 100.0, budget) for _ in range(3)] == [0.0, 0.0, 60.0]
    # at most one warning a second, however many calls fail
    assert {r.getMessage() for r in caplog.records} == {
        "rate-limit state not shared (redis failed); this replica's own for now"}


async def test_without_redis_a_timer_is_not_stored_and_says_so(
        redis_server: RedisServer, redis_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    queue = RedisQueue(redis_client, Metrics(), maxsize=100, consumer="a",
                       keys=Keys("{conveyor-test-away-timers}"))
    scheduler = RedisScheduler(queue, lambda: now, poll=0.02)
    scheduler.at("soak:acme/deploy#1", now - timedelta(minutes=1),
                 GateRecheck("acme/deploy", 1, 1))
    scheduler.at("soak:acme/deploy#2", now + timedelta(minutes=30),
                 GateRecheck("acme/deploy", 2, 1))
    await asyncio.sleep(0.1)
    assert set(await scheduler.timers()) == {"soak:acme/deploy#1", "soak:acme/deploy#2"}
    # the past one is no longer pending here; the future one is
    assert scheduler.pending() == {"soak:acme/deploy#2": now + timedelta(minutes=30)}
    redis_server.stop()
    caplog.set_level(logging.WARNING, logger="bot.redisq.timers")
    scheduler.at("merge:acme/deploy#3", now + timedelta(minutes=1),
                 DashboardDue("acme/deploy", 1))
    scheduler.start()
    await scheduler.close()  # waits for the write that failed
    assert [r.getMessage() for r in caplog.records] == [
        "timer not stored; the resync sets it again"]
    scheduler.cancel_all()
    assert scheduler.pending() == {}
