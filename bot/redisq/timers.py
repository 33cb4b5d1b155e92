"""Soak, freeze, merge-retry and dashboard timers kept in Redis, fired by exactly one replica.

A timer is a member of a sorted set scored by its due time (epoch seconds), with its job in a
hash beside it. Every replica looks for due timers twice a second; one script takes a due
timer out of both and appends its job to the delivery stream, atomically — so whichever
replica runs it first fires the timer, once, and the job is never lost between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis.asyncio import Redis

from bot.redisq.client import REDIS_ERRORS, stop_requested, wait
from bot.redisq.stream import RedisQueue, encode
from bot.runtime.queue import Job
from bot.runtime.scheduler import Scheduler, internal_event
from bot.runtime.timer_jobs import TimerJob

log = logging.getLogger(__name__)

FIRE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local fired = 0
for _, key in ipairs(due) do
  local job = redis.call('HGET', KEYS[2], key)
  redis.call('ZREM', KEYS[1], key)
  redis.call('HDEL', KEYS[2], key)
  if job then
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'job', job)
    fired = fired + 1
  end
end
return fired
"""


class RedisScheduler(Scheduler):
    def __init__(self, queue: RedisQueue, clock: Callable[[], datetime], *,
                 poll: float = 0.5) -> None:
        super().__init__(queue, clock)
        self.redis: Redis = queue.redis
        self.keys = queue.keys
        self.maxlen = queue.maxlen
        self.poll = poll
        self._fire = self.redis.register_script(FIRE)
        self._known: dict[str, datetime] = {}  # timers set by this replica, for `pending`
        self._writes: set[asyncio.Task[Any]] = set()
        self._poller: asyncio.Task[None] | None = None
        self._stopped = False

    def start(self) -> None:
        self._poller = asyncio.create_task(self._poll(), name="conveyor-timers")

    async def close(self) -> None:
        self._stopped = True
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None
        await asyncio.gather(*self._writes, return_exceptions=True)

    def at(self, key: str, when: datetime, job: TimerJob) -> None:
        """Store the timer (a later call with the same key replaces it, on any replica)."""
        self._known[key] = when
        self._spawn(self.store(key, when, job))

    async def store(self, key: str, when: datetime, timer_job: TimerJob) -> bool:
        job = encode(Job.of("", internal_event(timer_job), timer_job.payload()))
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.zadd(self.keys.timers, {key: when.timestamp()})
                pipe.hset(self.keys.timer_jobs, key, job)
                await pipe.execute()
        except REDIS_ERRORS as exc:
            log.warning("timer not stored; the resync sets it again",
                        extra={"event": timer_job.EVENT, "error": str(exc)})
            return False
        return True

    def pending(self) -> dict[str, datetime]:
        now = self._clock()
        self._known = {key: when for key, when in self._known.items() if when > now}
        return dict(sorted(self._known.items()))

    def fire_due(self) -> int:
        """Fire what is due by the clock now (without waiting for the next poll)."""
        due = [key for key, when in self._known.items() if when <= self._clock()]
        self._spawn(self._fire_quietly())
        return len(due)

    async def fire_due_now(self) -> int:
        """Move every due timer to the delivery stream; returns how many this replica fired."""
        fired = await self._fire(
            keys=[self.keys.timers, self.keys.timer_jobs, self.keys.stream],
            args=[self._clock().timestamp(), self.maxlen, 100])
        return int(fired or 0)

    async def timers(self) -> dict[str, float]:
        """Every stored timer and its due time, whichever replica set it."""
        stored = await wait(self.redis.zrange(self.keys.timers, 0, -1, withscores=True))
        return {str(key): float(score) for key, score in stored}

    def cancel_all(self) -> None:
        """Shutdown: stop polling here; the timers stay in Redis for the other replicas."""
        self._stopped = True
        if self._poller is not None:
            self._poller.cancel()
        self._known.clear()

    async def _poll(self) -> None:
        while not self._stopped:
            await self._fire_quietly()
            await asyncio.sleep(self.poll)

    async def _fire_quietly(self) -> None:
        with contextlib.suppress(*REDIS_ERRORS):
            await self.fire_due_now()
        if stop_requested():
            raise asyncio.CancelledError

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
