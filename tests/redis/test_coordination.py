"""The shared queue, locks and timers against a real redis-server, in one process: several
instances stand for several replicas."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")

from bot.metrics import Metrics
from bot.redisq import RedisLocks, RedisQueue, RedisScheduler
from bot.redisq.client import connect
from bot.runtime.queue import Job, cancel_until_done
from bot.runtime.timer_jobs import GateRecheck, MergeRetry
from tests.harness import Clock
from tests.redis.support import RedisServer
from tests.reliability.support import metric_samples


def replica(client: Any, name: str, **options: Any) -> RedisQueue:
    return RedisQueue(client, Metrics(), maxsize=1000, consumer=name, block_ms=100, **options)


def job(delivery_id: str, **payload: Any) -> Job:
    return Job.of(delivery_id, "push", {"n": delivery_id, **payload})


async def test_offer_take_done_and_dedupe_across_replicas(redis_client: Any) -> None:
    first, second = replica(redis_client, "a"), replica(redis_client, "b")
    assert await first.offer(job("d-1")) == "accepted"
    assert await second.offer(job("d-1")) == "duplicate"  # the other replica stored it
    assert await second.offer(job("d-2")) == "accepted"
    taken = [await first.take(), await second.take()]
    assert sorted(j.delivery_id for j in taken) == ["d-1", "d-2"]
    assert taken[0].payload()["n"] == taken[0].delivery_id
    for queue, item in zip((first, second), taken, strict=True):
        await queue.done(item)
    assert await redis_client.xlen(first.keys.stream) == 0  # acknowledged and deleted
    summary = await redis_client.xpending(first.keys.stream, first.keys.group)
    assert summary["pending"] == 0


async def test_a_stopped_replicas_entry_is_claimed_and_poison_goes_to_dead_letters(
        redis_client: Any) -> None:
    metrics = Metrics()
    queues = [RedisQueue(redis_client, metrics if i == 2 else Metrics(), maxsize=100,
                         consumer=f"r{i}", claim_timeout=0.2, max_attempts=3, block_ms=50)
              for i in range(3)]
    assert await queues[0].offer(job("poison")) == "accepted"
    # Each replica takes it and dies before finishing (never calls done).
    for attempt in range(3):
        queue = queues[attempt % 2]
        taken = await asyncio.wait_for(queue.take(), 5)
        assert taken.delivery_id == "poison"
        queue._held.clear()  # the replica is gone: nobody keeps the entry alive
        await asyncio.sleep(0.25)
    # A fourth delivery would exceed max_attempts: the entry is moved aside, not worked on.
    assert await queues[2].offer(job("healthy")) == "accepted"
    taken = await asyncio.wait_for(queues[2].take(), 5)
    assert taken.delivery_id == "healthy"
    await queues[2].done(taken)
    dead = await redis_client.xrange(queues[2].keys.dead_letters)
    assert [fields["attempts"] for _id, fields in dead] == ["4"]
    assert '"poison"' in dead[0][1]["job"]
    from prometheus_client import generate_latest
    text = generate_latest(metrics.registry).decode()
    assert metric_samples(text, "conveyor_dead_letters_total") == {(): 1.0}
    assert await redis_client.xlen(queues[0].keys.stream) == 0


async def test_work_in_progress_is_kept_alive_and_not_claimed(redis_client: Any) -> None:
    slow, other = (replica(redis_client, name, claim_timeout=0.3) for name in ("slow", "other"))
    slow.start()
    try:
        assert await slow.offer(job("long")) == "accepted"
        taken = await slow.take()
        stolen = asyncio.ensure_future(other.take())
        await asyncio.sleep(1.0)  # three claim timeouts while the job runs
        assert not stolen.done()
        await slow.done(taken)
        await cancel_until_done([stolen], every=0.05)  # as the worker pool stops its workers
    finally:
        await slow.close()


async def test_a_failed_job_is_retried(redis_client: Any) -> None:
    queue = replica(redis_client, "a", claim_timeout=0.1)
    await queue.offer(job("flaky"))
    first = await queue.take()
    await queue.done(first, ok=False)
    await asyncio.sleep(0.15)
    again = await asyncio.wait_for(queue.take(), 5)
    assert again.delivery_id == "flaky" and again.receipt == first.receipt
    await queue.done(again)


async def test_redis_down_means_unavailable_never_accepted(redis_server: RedisServer) -> None:
    client = connect(redis_server.url)
    try:
        queue = replica(client, "a")
        assert await queue.offer(job("before")) == "accepted"
        redis_server.stop()
        assert await queue.offer(job("during")) == "unavailable"
        redis_server.start()
        assert await queue.offer(job("during")) == "accepted"  # not remembered as seen
        assert await queue.offer(job("before")) == "duplicate"  # survived the restart
        got = {(await queue.take()).delivery_id for _ in range(2)}
        assert got == {"before", "during"}
    finally:
        await client.aclose()


async def test_lock_fencing_a_stale_owner_cannot_release(redis_client: Any) -> None:
    first = RedisLocks(redis_client, ttl=0.2)
    second = RedisLocks(redis_client, ttl=5)
    stale = await first.acquire("acme/deploy")
    await asyncio.sleep(0.3)  # first stalls past the expiry without renewing
    current = await second.acquire("ACME/deploy")
    assert current.fence > stale.fence
    assert not await first.release(stale)
    assert not await first.renew(stale)
    assert await redis_client.get(second.keys.lock("acme/deploy")) == current.token
    assert await second.release(current)
    assert await redis_client.get(second.keys.lock("acme/deploy")) is None


async def test_locks_serialise_work_across_replicas_and_renew_while_held(
        redis_client: Any) -> None:
    replicas = [RedisLocks(redis_client, ttl=0.3, poll=0.01) for _ in range(3)]
    inside = 0
    most = 0
    order: list[int] = []

    async def work(index: int) -> None:
        nonlocal inside, most
        async with replicas[index % 3].hold("acme/deploy"):
            inside += 1
            most = max(most, inside)
            # The first holder outlives the expiry three times over: renewal keeps it.
            await asyncio.sleep(0.9 if not order else 0.01)
            order.append(index)
            inside -= 1

    await asyncio.gather(*(work(i) for i in range(12)))
    assert most == 1 and sorted(order) == list(range(12))


async def test_timers_fire_once_across_replicas(redis_client: Any) -> None:
    clock = Clock(datetime(2026, 11, 30, 10, 0, tzinfo=UTC))
    queues = [replica(redis_client, f"r{i}") for i in range(3)]
    schedulers = [RedisScheduler(q, clock, poll=0.02) for q in queues]
    for index, scheduler in enumerate(schedulers):
        # Every replica sets the same soak timer (a later call replaces it) and one of its own.
        scheduler.at("soak:acme/deploy#7", clock() + timedelta(minutes=30),
                     GateRecheck("acme/deploy", 7, 1))
        scheduler.at(f"merge:{index}", clock() + timedelta(minutes=1),
                     MergeRetry("acme/deploy", index, "abc", "merge", environment="staging",
                                attempt=1, gated=False, installation=1))
    expected = {"soak:acme/deploy#7", "merge:0", "merge:1", "merge:2"}
    for _ in range(100):  # `at` does not wait for Redis: its writes may still be in flight
        if set(await schedulers[0].timers()) == expected:
            break
        await asyncio.sleep(0.05)
    assert set(await schedulers[0].timers()) == expected
    for scheduler in schedulers:
        scheduler.start()
    try:
        await asyncio.sleep(0.2)
        assert await redis_client.xlen(queues[0].keys.stream) == 0  # nothing due yet
        clock.advance(minutes=31)
        fired: list[Job] = []
        for _ in range(4):
            fired.append(await asyncio.wait_for(queues[len(fired) % 3].take(), 5))
        await asyncio.sleep(0.3)  # every poller had its chance to fire again
        assert await redis_client.xlen(queues[0].keys.stream) == 4
        assert sorted(j.event for j in fired) == ["conveyor.merge", "conveyor.merge",
                                                  "conveyor.merge", "conveyor.recheck"]
        assert sorted(MergeRetry.of(j.payload()).number for j in fired
                      if j.event == "conveyor.merge") == [0, 1, 2]
        assert all(j.delivery_id.startswith("internal-") for j in fired)
        assert await schedulers[1].timers() == {}
    finally:
        for scheduler in schedulers:
            await scheduler.close()


async def test_a_paused_queue_ends_the_worker_taking_even_without_its_cancellation(
        redis_client: Any) -> None:
    """A cancellation lost inside redis-py's blocking read cannot keep a worker: the read
    returns after its block time, sees the pause and ends the take."""
    queue = replica(redis_client, "stopping")
    taking = asyncio.ensure_future(queue.take())
    await asyncio.sleep(0.05)  # blocked in XREADGROUP on an empty stream
    queue.pause()
    await asyncio.wait({taking}, timeout=2)
    assert taking.cancelled()
