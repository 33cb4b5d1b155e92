"""Several `python -m bot serve` processes sharing one redis-server, against the emulator:
a replica killed mid-work, 1,000 deliveries round-robin over three replicas, a Redis outage."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")

from bot.redisq.client import Keys, connect
from bot.sandbox.demo import DEPLOY_REPO, release, seed
from conveyor_emulator import Emulator
from tests.botprocess import BotProcess
from tests.harness import SECRET
from tests.redis.support import RedisServer, redis_bot
from tests.reliability.support import (
    assert_no_half_made_branches,
    assert_one_pr_per_promotion,
    metric_samples,
    post_signed,
    promotion_counts,
    promotion_prs,
    wait_for,
)

SERVICES = ("web", "api")
STAGING_FILES = {"web": "apps/web/overlays/staging/kustomization.yaml",
                 "api": "charts/api/values-staging.yaml"}


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    emu = Emulator(webhook_secret=SECRET, validate_openapi=False)
    await emu.start()
    seed(emu)
    try:
        yield emu
    finally:
        await emu.stop()


async def start_bots(emulator: Emulator, workdir: Path, redis: RedisServer, count: int,
                     **options: Any) -> list[BotProcess]:
    bots = [redis_bot(emulator, workdir, f"bot{i}", redis.url, **options) for i in range(count)]
    await asyncio.gather(*(bot.wait_healthy() for bot in bots))
    return bots


def stop_all(bots: list[BotProcess]) -> None:
    for bot in bots:
        if bot.process.poll() is None:
            bot.stop()


def promoted(emulator: Emulator, digests: dict[str, str]) -> bool:
    counts = promotion_counts(emulator)
    return all(counts[(s, "staging", d)] == 1 for s, d in digests.items()) and all(
        pr["merged"] for pr in emulator.pulls(DEPLOY_REPO, state="all"))


def half_made(emulator: Emulator) -> list[str]:
    with_pr = {pr["head"]["ref"] for pr in emulator.pulls(DEPLOY_REPO, state="all")}
    return [b for b in emulator.branches(DEPLOY_REPO)
            if b.startswith("conveyor/") and b not in with_pr]


async def stream_drained(redis: RedisServer, within: float) -> bool:
    client = connect(redis.url)
    keys = Keys()
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            if await client.xlen(keys.stream) == 0:
                return True
            await asyncio.sleep(0.1)
        return False
    finally:
        await client.aclose()


def assert_all_promoted(emulator: Emulator, digests: dict[str, str]) -> None:
    assert_one_pr_per_promotion(emulator)
    assert_no_half_made_branches(emulator)
    for service, digest in digests.items():
        text = emulator.file(DEPLOY_REPO, STAGING_FILES[service])
        assert text is not None and digest in text
    for found in promotion_prs(emulator):
        bodies = Counter(c["body"] for c in emulator.comments(DEPLOY_REPO, found["pr"]["number"]))
        assert all(n == 1 for n in bodies.values()), bodies


async def test_sigkill_one_replica_mid_work_the_other_claims_and_finishes(
        emulator: Emulator, redis_server: RedisServer, tmp_path: Path) -> None:
    bots = await start_bots(emulator, tmp_path, redis_server, 2, claim_timeout=1.5)
    first, second = bots
    try:
        emulator.faults.latency = 0.2  # every API request is slow: work is in flight
        emulator.webhook_url = first.webhook_url
        digests = {service: await release(emulator, service, "1.0.0") for service in SERVICES}
        # Kill the moment a promotion branch exists but its PR does not.
        assert await wait_for(lambda: bool(half_made(emulator)), within=30, interval=0.002), (
            first.log()[-3000:], second.log()[-3000:])
        first.kill()
        emulator.faults.latency = 0.0
        emulator.webhook_url = second.webhook_url  # the load balancer drops the dead replica
        # No resync runs (CONVEYOR_RESYNC_INTERVAL=0): only the claimed entries can finish it.
        assert await wait_for(lambda: promoted(emulator, digests), within=40, interval=0.1), (
            promotion_counts(emulator), second.log()[-4000:])
        assert await stream_drained(redis_server, within=20)
        await emulator.settle()
        assert "claimed a delivery left pending by a stopped replica" in second.log()
        assert_all_promoted(emulator, digests)
    finally:
        stop_all(bots)


async def test_three_replicas_1000_deliveries_round_robin_every_promotion_once(
        emulator: Emulator, redis_server: RedisServer, tmp_path: Path) -> None:
    bots = await start_bots(emulator, tmp_path, redis_server, 3, workers=4)
    try:
        # Record the events of two releases without sending them, then replay them ourselves.
        emulator.webhook_url = None
        digests = {service: await release(emulator, service, "1.0.0") for service in SERVICES}
        await emulator.settle()
        recorded = [(d.event, d.payload, d.guid) for d in emulator.deliveries
                    if d.event in ("registry_package", "package")
                    or (d.event, d.action) == ("release", "released")]
        assert {event for event, _p, _g in recorded} >= {"release", "registry_package"}
        emulator.webhook_url = bots[0].webhook_url  # merges etc. arrive at one replica

        # Each recorded event: 20 times under new ids (a race between replicas) and 10 times
        # under its own id (GitHub redelivering it); the rest are pushes to a feature branch.
        sends: list[tuple[str, dict[str, Any], str]] = []
        for event, payload, guid in recorded:
            sends += [(event, payload, f"{guid}-{n}") for n in range(20)]
            sends += [(event, payload, guid)] * 10
        push = {"ref": "refs/heads/feature", "installation": recorded[0][1]["installation"],
                "repository": {"id": 2, "full_name": "acme/web", "name": "web",
                               "owner": {"login": "acme"}, "default_branch": "main"},
                "sender": {"login": "alice", "type": "User"}, "commits": [], "deleted": False}
        sends += [("push", push, f"push-{n}") for n in range(1000 - len(sends))]
        sends = [sends[i] for i in interleaved(len(sends))]
        assert len(sends) == 1000
        targets = itertools.cycle(bots)
        limit = asyncio.Semaphore(50)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=60)) as session:

            async def deliver(bot: BotProcess, event: str, payload: dict[str, Any],
                              delivery: str) -> int:
                async with limit:
                    return await post_signed(session, bot.webhook_url, event, payload, delivery)

            statuses = await asyncio.gather(*(deliver(next(targets), *send) for send in sends))
        assert set(statuses) == {202}, Counter(statuses)

        assert await wait_for(lambda: promoted(emulator, digests), within=45, interval=0.2), (
            promotion_counts(emulator), bots[0].log()[-3000:])
        assert await stream_drained(redis_server, within=30)
        await emulator.settle()
        assert await stream_drained(redis_server, within=30)
        assert_all_promoted(emulator, digests)

        texts = [await bot.metrics() for bot in bots]
        outcomes: Counter[str] = Counter()
        processed = 0.0
        for text in texts:
            for labels, value in metric_samples(text, "conveyor_deliveries_total").items():
                outcomes[dict(labels)["outcome"]] += int(value)
            processed += sum(metric_samples(text, "conveyor_processing_seconds_count").values())
        # A delivery id is accepted once across the replicas; every other copy is a duplicate.
        assert outcomes["duplicate"] == 9 * len(recorded), outcomes
        assert outcomes["accepted"] == 1000 - 9 * len(recorded) + len(emulator_sent(emulator))
        assert processed == outcomes["accepted"]  # every stored delivery was worked off once
        assert all(bot.process.poll() is None for bot in bots)
    finally:
        stop_all(bots)


def interleaved(count: int) -> list[int]:
    """A fixed shuffle (stride 7 over the list) so that copies of one event spread out."""
    order = list(range(0, count, 7))
    for start in range(1, 7):
        order += list(range(start, count, 7))
    return order


def emulator_sent(emulator: Emulator) -> list[Any]:
    """Deliveries the emulator itself sent and a replica accepted (effects of the promotions)."""
    return [d for d in emulator.deliveries if d.request_headers and d.status_code == 202]


async def test_redis_outage_answers_503_and_loses_nothing_once_it_returns(
        emulator: Emulator, redis_server: RedisServer, tmp_path: Path) -> None:
    bots = await start_bots(emulator, tmp_path, redis_server, 2)
    try:
        emulator.webhook_url = bots[1].webhook_url
        redis_server.stop()
        digests = {service: await release(emulator, service, "1.0.0") for service in SERVICES}
        await emulator.settle()
        failed = [d for d in emulator.deliveries if d.status_code == 503]
        # Every handled delivery was refused (events the bot does not handle get 204 as ever).
        assert failed and all(d.status_code in (503, 204) for d in emulator.deliveries)
        assert not emulator.pulls(DEPLOY_REPO, state="all")
        text = await bots[1].metrics()
        outcomes = {dict(k)["outcome"] for k in metric_samples(text, "conveyor_deliveries_total")}
        assert outcomes == {"store_unavailable", "ignored"}

        redis_server.start()
        # GitHub's redelivery of the failed deliveries (what the resync's Redeliverer asks for).
        for delivery in failed:
            assert await emulator.redeliver(delivery.id) == 202
        assert await wait_for(lambda: promoted(emulator, digests), within=30, interval=0.1), (
            promotion_counts(emulator), bots[0].log()[-3000:], bots[1].log()[-3000:])
        assert await stream_drained(redis_server, within=20)
        await emulator.settle()
        assert_all_promoted(emulator, digests)
    finally:
        stop_all(bots)
