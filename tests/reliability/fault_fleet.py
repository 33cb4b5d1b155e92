"""The processes of a fault run: the bot (one `python -m bot serve` in memory mode, or replicas
on one real Redis), killed and replaced; the Redis server, killed and restarted; and what is
still queued in either."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import aiohttp

from bot.redisq.client import Keys
from conveyor_emulator import Emulator
from tests.botprocess import BotProcess


class Fleet:
    """The bot processes of the run, and the Redis server they share (Redis mode)."""

    def __init__(self, emulator: Emulator, workdir: Path, *, replicas: int,
                 content_limits: bool, redis: Any | None) -> None:
        self.emulator, self.workdir = emulator, workdir
        self.replicas, self.content_limits = replicas, content_limits
        self.redis = redis  # tests.redis.support.RedisServer, or None in memory mode
        self.live: list[BotProcess] = []
        self.started = 0
        self.redis_away: list[tuple[float, float]] = []  # epoch seconds: killed, back

    async def start(self) -> None:
        for _ in range(self.replicas if self.redis is not None else 1):
            await self.start_one()

    async def start_one(self) -> BotProcess:
        self.started += 1
        env = {"CONVEYOR_WORKERS": "4"}
        if not self.content_limits:
            env["CONVEYOR_CONTENT_LIMITS"] = "off"
        if self.redis is not None:
            env.update({"CONVEYOR_REDIS_URL": self.redis.url,
                        "CONVEYOR_REDIS_CLAIM_TIMEOUT": "5"})
        process = BotProcess(self.emulator, self.workdir, f"bot-{self.started}", resync=5,
                             extra_env=env)
        await process.wait_healthy(within=60)
        self.live.append(process)
        self.point_webhooks()
        return process

    def point_webhooks(self) -> None:
        """GitHub delivers to one address: a live process (any replica stores into Redis)."""
        self.emulator.webhook_url = self.live[0].webhook_url if self.live else None

    async def kill_one(self, rng: random.Random) -> None:
        victim = rng.choice(self.live)
        victim.kill()
        self.live.remove(victim)
        self.point_webhooks()
        # Let a secondary-limit window the dead process was told of run out: the next process
        # cannot know of it (in memory mode).
        await asyncio.sleep(self.emulator.faults.retry_after + 1)
        await self.start_one()

    async def restart_redis(self, rng: random.Random) -> None:
        """SIGKILL the Redis server, and start it again on its port a moment later: what it
        acknowledged is on disk (append-only file, fsync on every write)."""
        assert self.redis is not None
        killed = time.time()
        self.redis.kill()
        await asyncio.sleep(rng.uniform(0.5, 3.0))
        await asyncio.to_thread(self.redis.start)
        self.redis_away.append((killed, time.time()))

    async def stop(self) -> None:
        for process in self.live:
            await process.stop_async()
        self.live.clear()

    async def queued(self) -> list[str]:
        """What is still waiting or in work, in words; empty when nothing is."""
        if self.redis is not None:
            return await redis_queued(self.redis.url)
        waiting = []
        async with aiohttp.ClientSession() as session:
            for process in self.live:
                try:
                    async with session.get(f"{process.base_url}/healthz") as response:
                        depth = int((await response.json()).get("queue_depth") or 0)
                except (aiohttp.ClientError, ValueError) as exc:
                    waiting.append(f"{process.name}: /healthz unreadable ({exc})")
                    continue
                if depth:
                    waiting.append(f"{process.name}: {depth} deliveries queued")
        return waiting


async def redis_queued(url: str) -> list[str]:
    """The shared queue's work left: entries waiting or taken and not acknowledged, retries
    not due yet, dead letters."""
    from redis.asyncio import Redis
    from redis.exceptions import RedisError

    keys = Keys()
    client = Redis.from_url(url, decode_responses=True, socket_timeout=5)
    try:
        length = await client.xlen(keys.stream)
        retries = await client.zcard(keys.retries)
        dead = await client.xlen(keys.dead_letters)
    except (OSError, RedisError) as exc:
        return [f"redis unreachable: {exc}"]
    finally:
        await client.aclose()
    return [f"{n} {what}" for n, what in ((length, "deliveries in the stream"),
                                          (retries, "job retries waiting"),
                                          (dead, "dead letters")) if n]


async def unacknowledged_lost(url: str, delivery_ids: list[str]) -> list[str]:
    """Deliveries the bot answered 202 whose intake record is gone from Redis: the record
    (`seen:<id>`) and the stream entry are written by one script before the answer, so a
    record missing is an acknowledged delivery Redis lost."""
    from redis.asyncio import Redis

    keys = Keys()
    client = Redis.from_url(url, decode_responses=True, socket_timeout=5)
    try:
        present = [bool(found) for found in await client.mget(
            [keys.seen(one) for one in delivery_ids])] if delivery_ids else []
    finally:
        await client.aclose()
    return [one for one, there in zip(delivery_ids, present, strict=True) if not there]
