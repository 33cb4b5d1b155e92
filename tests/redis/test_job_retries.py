"""A job that failed for a transient reason waits in Redis for its next attempt, and any
replica runs it when it is due; the attempt that failed is acknowledged."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")

from bot.metrics import Metrics
from bot.redisq import RedisQueue
from bot.redisq.client import Keys
from bot.runtime.queue import Job, JobRetry, RetryJob, WorkerPool
from tests.reliability.support import metric_samples


async def test_a_transient_failure_is_retried_through_redis_by_any_replica(
        redis_client: Any) -> None:
    keys = Keys("{conveyor-test-retries}")
    first = RedisQueue(redis_client, Metrics(), maxsize=100, consumer="a", block_ms=50,
                       stats_interval=0.05, keys=keys)
    second = RedisQueue(redis_client, Metrics(), maxsize=100, consumer="b", block_ms=50,
                        stats_interval=0.05, keys=keys)
    runs: list[tuple[str, int, tuple[str, ...]]] = []
    metrics = Metrics()

    async def flaky(job: Job) -> None:
        runs.append((job.delivery_id, job.attempt, job.only))
        if job.attempt < 3:
            raise RetryJob(("pulls.gate",))

    pools = [WorkerPool(queue, flaky, workers=1, metrics=metrics,
                        retry=JobRetry(attempts=4, base_delay=0.05, max_delay=0.1))
             for queue in (first, second)]
    for queue in (first, second):
        queue.start()
    for pool in pools:
        pool.start()
    try:
        assert await first.offer(Job.of("d-7", "push", {"n": 7})) == "accepted"
        for _ in range(200):
            if len(runs) >= 3:
                break
            await asyncio.sleep(0.05)
        assert runs == [("d-7", 1, ()), ("d-7", 2, ("pulls.gate",)),
                        ("d-7", 3, ("pulls.gate",))]
        await asyncio.sleep(0.2)
        assert await redis_client.zcard(keys.retries) == 0
        assert await redis_client.xlen(keys.stream) == 0  # every attempt acknowledged
        from prometheus_client import generate_latest

        text = generate_latest(metrics.registry).decode()
        assert metric_samples(text, "conveyor_job_retries_total") == {(("event", "push"),): 2.0}
    finally:
        for pool in pools:
            await pool.drain(1)
        for queue in (first, second):
            await queue.close()
