"""The Redis connection of a scale-out deployment, and the names of the keys it uses.

redis-py's asyncio client is imported here only: the default install (one process, no Redis)
never loads it. Every key shares the hash tag `{conveyor}` so that the scripts, which touch
several keys at once, also run on a Redis Cluster (all keys in one slot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

# What a lost or refused connection raises: redis-py's own errors and the socket's.
REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)

PREFIX = "{conveyor}"


def connect(url: str) -> Redis:
    """A client that fails fast: the webhook endpoint must answer within GitHub's 10 s."""
    return Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=5,
        socket_connect_timeout=2,
        health_check_interval=15,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), 2),
        client_name="conveyor",
    )


async def wait(result: Awaitable[Any] | Any) -> Any:
    """Await a redis-py command: its stubs describe the sync and async clients at once."""
    return await cast(Awaitable[Any], result)


def stop_requested() -> bool:
    """True once the running task was cancelled. A loop that catches connection errors checks
    it, so that a cancellation surfacing as a connection or timeout error is never retried."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Keys:
    """Every key of one deployment (a prefix, so that tests and benchmarks can share a server)."""

    def __init__(self, prefix: str = PREFIX) -> None:
        self.prefix = prefix
        self.stream = f"{prefix}:deliveries"
        self.dead_letters = f"{prefix}:dead-letters"
        self.group = "conveyor"
        self.timers = f"{prefix}:timers"
        self.timer_jobs = f"{prefix}:timer-jobs"
        self.retries = f"{prefix}:retries"

    def seen(self, delivery_id: str) -> str:
        return f"{self.prefix}:seen:{delivery_id}"

    def health(self, consumer: str) -> str:
        return f"{self.prefix}:health:{consumer}"

    def lock(self, key: str) -> str:
        return f"{self.prefix}:lock:{key}"

    def fence(self, key: str) -> str:
        return f"{self.prefix}:fence:{key}"

    def wanted(self, key: str) -> str:
        return f"{self.prefix}:wanted:{key}"

    def github_hold(self, installation: int) -> str:
        return f"{self.prefix}:github-hold:{installation}"

    def github_writes(self, installation: int) -> str:
        return f"{self.prefix}:github-writes:{installation}"
