"""Scale-out on Redis: the delivery queue, the repository locks, the timers and the GitHub
rate-limit state that several replicas share. Used only when `CONVEYOR_REDIS_URL` is set;
needs the `redis` extra (`pip install 'conveyor-bot[redis]'`). Installation tokens, ETag caches
and the policy cache stay in each process's memory: nothing secret is ever written to Redis.

It imports the runtime (the queue, timers and settings it stands in for) and the GitHub
edge's rate-limit state; only `bot.serving` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from redis.asyncio import Redis

from bot.metrics import Metrics
from bot.redisq.client import Keys, connect
from bot.redisq.locks import RedisLocks
from bot.redisq.ratelimit import RedisLimitStore
from bot.redisq.stream import RedisQueue
from bot.redisq.timers import RedisScheduler
from bot.runtime.settings import Settings

__all__ = ["Keys", "RedisLimitStore", "RedisLocks", "RedisQueue", "RedisScheduler", "ScaleOut"]


@dataclass
class ScaleOut:
    redis: Redis
    queue: RedisQueue
    locks: RedisLocks
    scheduler: RedisScheduler
    limits: RedisLimitStore

    @classmethod
    def connect(cls, settings: Settings, metrics: Metrics,
                clock: Callable[[], datetime]) -> ScaleOut:
        """Builds the clients; nothing is sent to Redis until the server starts."""
        redis = connect(settings.redis_url)
        queue = RedisQueue(redis, metrics, maxsize=settings.queue_size,
                           claim_timeout=settings.redis_claim_timeout)
        # A dead replica's locks expire when its deliveries may be claimed: after the timeout.
        locks = RedisLocks(redis, ttl=settings.redis_claim_timeout)
        return cls(redis, queue, locks, RedisScheduler(queue, clock), RedisLimitStore(redis))

    def start(self) -> None:
        self.queue.start()
        self.scheduler.start()

    def pause(self) -> None:
        """Shutdown begins: take no new deliveries, fire no timers (other replicas will)."""
        self.queue.pause()
        self.scheduler.cancel_all()

    async def close(self) -> None:
        await self.scheduler.close()
        await self.queue.close()
        await self.redis.aclose()
