"""Per-repository locks shared by every replica: work on one deployment repository is serial.

A lock is a key holding `<fence>:<owner>`, set only if absent, with an expiry so that a dead
replica's lock frees itself. The fence is a counter per key, increased on every acquisition:
each holder gets a larger number than the one before (a fencing token). Only the holder whose
exact token is in the key may renew or release it, so a replica that stalled past the expiry
cannot release the lock its successor now holds. While a block runs, the lock is renewed every
third of its expiry. A lease (`lease`) is the same key taken without waiting, for work one
replica does for all (the resync of an installation): kept while the work runs, then for the
rest of the interval; a dead holder's lease expires with it and the next replica to look takes
it. A free lock goes to a replica already waiting for it before a newcomer
(the releasing replica's next task is one), so replicas take turns. Inside one process an
asyncio lock queues the waiters first, so a replica polls Redis once per key, not once per
waiting task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from redis.asyncio import Redis

from bot.redisq.client import REDIS_ERRORS, Keys, stop_requested
from bot.runtime.queue import KeyedLocks

log = logging.getLogger(__name__)

# A caller that is not waiting yet leaves a free lock to those who are (the `wanted` mark,
# refreshed by every waiter's poll): otherwise the replica that just released it would take
# it again at once for its next local task, and the other replicas could wait for minutes.
ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1
    or (ARGV[3] == '0' and redis.call('EXISTS', KEYS[3]) == 1) then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[4])
  return false
end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], fence .. ':' .. ARGV[1], 'PX', ARGV[2])
return fence
"""

# Renew or release only if the key still holds this very token.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LockUnavailable(Exception):
    """The lock could not be had in time (held too long elsewhere, or Redis unreachable)."""


@dataclass(frozen=True)
class Lease:
    key: str
    fence: int
    token: str


class RedisLocks:
    shared = True

    def __init__(self, redis: Redis, *, keys: Keys | None = None, ttl: float = 30.0,
                 wait_limit: float = 300.0, poll: float = 0.05) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.ttl = ttl
        self.wait_limit = wait_limit
        self.poll = poll
        self.owner = uuid.uuid4().hex
        self._local = KeyedLocks()
        self._acquire = redis.register_script(ACQUIRE)
        self._renew = redis.register_script(RENEW)
        self._release = redis.register_script(RELEASE)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        async with self._local.hold(key):
            lease = await self.acquire(key)
            keeper = asyncio.create_task(self._keep(lease), name=f"conveyor-lock-{key}")
            try:
                yield
            finally:
                keeper.cancel()
                await asyncio.gather(keeper, return_exceptions=True)
                with contextlib.suppress(*REDIS_ERRORS):
                    # Unreachable Redis: the lock expires by itself after `ttl`.
                    await self.release(lease)

    @contextlib.asynccontextmanager
    async def lease(self, key: str, *, keep_for: float) -> AsyncIterator[bool]:
        key = key.lower()
        attempt = f"{self.owner}-{uuid.uuid4().hex[:8]}"
        try:
            fence = await self._acquire(
                keys=[self.keys.lock(key), self.keys.fence(key), self.keys.wanted(key)],
                args=[attempt, int(self.ttl * 1000), 1, 1])
        except REDIS_ERRORS as exc:
            if stop_requested():
                raise asyncio.CancelledError from exc
            log.warning("could not take a lease; another replica will do the work",
                        extra={"lease": key, "error": str(exc)})
            fence = None
        if not fence:
            yield False
            return
        lease = Lease(key, int(fence), f"{int(fence)}:{attempt}")
        keeper = asyncio.create_task(self._keep(lease), name=f"conveyor-lease-{key}")
        try:
            yield True
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
            with contextlib.suppress(*REDIS_ERRORS):
                # Held on for the rest of the interval (or freed now when there is none left).
                if keep_for > 0:
                    await self._renew(keys=[self.keys.lock(key)],
                                      args=[lease.token, int(keep_for * 1000)])
                else:
                    await self.release(lease)

    async def acquire(self, key: str) -> Lease:
        key = key.lower()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_limit
        attempt = f"{self.owner}-{uuid.uuid4().hex[:8]}"
        waiting = 0
        while True:
            try:
                fence = await self._acquire(
                    keys=[self.keys.lock(key), self.keys.fence(key), self.keys.wanted(key)],
                    args=[attempt, int(self.ttl * 1000), waiting, int(self.poll * 4000)])
            except REDIS_ERRORS as exc:
                if stop_requested():
                    raise asyncio.CancelledError from exc
                if loop.time() >= deadline:
                    raise LockUnavailable(f"lock {key}: {exc}") from exc
                await asyncio.sleep(0.2)
                continue
            if fence:
                return Lease(key, int(fence), f"{int(fence)}:{attempt}")
            if loop.time() >= deadline:
                raise LockUnavailable(f"lock {key} held elsewhere for {self.wait_limit:.0f} s")
            waiting = 1
            await asyncio.sleep(self.poll * (0.5 + random.random()))

    async def renew(self, lease: Lease) -> bool:
        renewed = await self._renew(keys=[self.keys.lock(lease.key)],
                                    args=[lease.token, int(self.ttl * 1000)])
        return bool(renewed)

    async def release(self, lease: Lease) -> bool:
        """True if this lease still held the lock; a stale owner releases nothing."""
        released = await self._release(keys=[self.keys.lock(lease.key)], args=[lease.token])
        return bool(released)

    async def _keep(self, lease: Lease) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                if not await self.renew(lease):
                    log.error("repository lock lost (expired while held); another replica may "
                              "work on it too", extra={"repository": lease.key})
                    return
            except REDIS_ERRORS as exc:
                if stop_requested():
                    raise asyncio.CancelledError from exc
                log.warning("could not renew a repository lock",
                            extra={"repository": lease.key, "error": str(exc)})
