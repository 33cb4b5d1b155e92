"""Replicas on one Redis share the resync: one replica reconciles an installation at a time,
the lease moves when its holder dies, and `/healthz` says whether Redis takes writes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bot.promotion.resync.reconcile import resync_all
from bot.sandbox.demo import seed
from bot.sandbox.stack import BotServer, bot_settings, start_bot
from conveyor_emulator import Emulator
from tests.harness import FAST_RETRY, SECRET, Clock
from tests.redis.support import RedisServer

KEEP_FOR = 60.0


async def start_replica(emulator: Emulator, redis_url: str, *, claim_timeout: float = 30
                        ) -> BotServer:
    settings = bot_settings(emulator, SECRET, workers=2, redis_url=redis_url,
                            redis_claim_timeout=claim_timeout)
    return await start_bot(settings, clock=Clock(), retry=FAST_RETRY)


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    built = Emulator(webhook_secret=SECRET, validate_openapi=True, clock=Clock())
    await built.start()
    seed(built)
    try:
        yield built
    finally:
        await built.stop()
    assert built.violations == [], built.violations


async def resync_requests(emulator: Emulator, replicas: list[BotServer]) -> int:
    """Installation requests made while every replica runs its periodic resync at once."""
    emulator.requests.reset()
    await asyncio.gather(*(resync_all(r.conveyor.capabilities.resync, keep_for=KEEP_FOR)
                           for r in replicas))
    for replica in replicas:
        await replica.conveyor.pool.wait_idle()
    return sum(1 for e in emulator.requests.entries if e.installation_id is not None)


def requests_made(replica: BotServer) -> float:
    return sum(sample.value for metric in replica.conveyor.ctx.metrics.github_requests.collect()
               for sample in metric.samples if sample.name.endswith("_total"))


async def test_three_replicas_resync_an_installation_once(
        emulator: Emulator, redis_server: RedisServer, redis_client: Any) -> None:
    twin = Emulator(webhook_secret=SECRET, validate_openapi=True, clock=Clock())
    await twin.start()
    seed(twin)
    alone = await start_replica(twin, redis_server.url)
    try:
        one = await resync_requests(twin, [alone])
    finally:
        await alone.stop()
        await twin.stop()
    assert one > 0

    await redis_client.flushall()  # the twin's lease is not this world's
    replicas = [await start_replica(emulator, redis_server.url) for _ in range(3)]
    try:
        # The same world, the same cold caches: the replica holding the lease makes the
        # requests one replica makes, the other two none at all.
        before = [requests_made(r) for r in replicas]
        assert await resync_requests(emulator, replicas) == one
        made = [requests_made(r) - b for r, b in zip(replicas, before, strict=True)]
        # Each lists the installations (an app request) to know which leases to try; the
        # holder also asks for the installation's token (an app request too).
        assert sorted(made) == [1, 1, 2 + one], made
        # Within the interval nobody resyncs again, not even the holder.
        assert await resync_requests(emulator, replicas) == 0
    finally:
        for replica in replicas:
            await replica.stop()


async def test_the_lease_moves_to_another_replica_when_its_holder_dies(
        emulator: Emulator, redis_server: RedisServer) -> None:
    first = await start_replica(emulator, redis_server.url, claim_timeout=1)
    second = await start_replica(emulator, redis_server.url, claim_timeout=1)
    try:
        holder = first.conveyor.ctx.leases.lease(f"resync:{emulator_installation(emulator)}",
                                                keep_for=0)
        assert await holder.__aenter__() is True
        # The holder stops renewing (its process is gone): the keeper task dies with it.
        for task in asyncio.all_tasks():
            if task.get_name().startswith("conveyor-lease-"):
                task.cancel()
        assert await resync_requests(emulator, [second]) == 0  # still held: skipped
        await asyncio.sleep(1.3)  # the claim timeout passes
        assert await resync_requests(emulator, [second]) > 0
    finally:
        await first.stop()
        await second.stop()


def emulator_installation(emulator: Emulator) -> int:
    [installation] = emulator.world.installations
    return int(installation)


async def test_healthz_reports_redis_and_answers_503_while_it_refuses_writes(
        emulator: Emulator, redis_server: RedisServer) -> None:
    replica = await start_replica(emulator, redis_server.url)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(replica.base_url + "/healthz") as response:
                assert response.status == 200
                assert (await response.json())["redis"] == "ok"
            redis_server.stop()
            async with session.get(replica.base_url + "/healthz") as response:
                assert response.status == 503
                body = await response.json()
                assert body["status"] == "redis unavailable"
                assert body["redis"].startswith("unavailable (")
            redis_server.start()
            async with session.get(replica.base_url + "/healthz") as response:
                assert response.status == 200
    finally:
        await replica.stop()
