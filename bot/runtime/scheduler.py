"""Timers that feed internal jobs into the same queue as webhooks (soak and freeze ends).

Timers live in memory only: after a restart the resync re-creates them from GitHub state.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from datetime import datetime

from bot.runtime.queue import DeliveryQueue, Job
from bot.runtime.timer_jobs import TimerJob

log = logging.getLogger(__name__)

INTERNAL_PREFIX = "conveyor."


def internal_event(job: TimerJob | type[TimerJob]) -> str:
    """The queue's event of a timer's job: `conveyor.<EVENT>`."""
    return INTERNAL_PREFIX + job.EVENT


class Scheduler:
    def __init__(self, queue: DeliveryQueue, clock: Callable[[], datetime]) -> None:
        self._queue = queue
        self._clock = clock
        self._timers: dict[str, tuple[datetime, asyncio.TimerHandle, TimerJob]] = {}
        self._offers: set[asyncio.Task[None]] = set()

    def enqueue(self, timer_job: TimerJob) -> None:
        """Offer an internal job to the queue (from a timer callback, so in a task)."""
        job = Job.of(f"internal-{uuid.uuid4()}", internal_event(timer_job),
                     timer_job.payload())
        task = asyncio.get_running_loop().create_task(self._offer(job))
        self._offers.add(task)
        task.add_done_callback(self._offers.discard)

    @property
    def offering(self) -> int:
        """Internal jobs handed to the queue but not stored yet (tests wait for zero)."""
        return len(self._offers)

    async def _offer(self, job: Job) -> None:
        if await self._queue.offer(job) not in ("accepted", "duplicate"):
            log.warning("queue full, internal job dropped until the next resync",
                        extra={"event": job.event})

    def at(self, key: str, when: datetime, job: TimerJob) -> None:
        """Enqueue ``job`` at `when`; a later call with the same key replaces the timer."""
        delay = max(0.0, (when - self._clock()).total_seconds())
        loop = asyncio.get_running_loop()
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous[1].cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            self.enqueue(job)

        self._timers[key] = (when, loop.call_later(delay, fire), job)

    def pending(self) -> dict[str, datetime]:
        return {key: timer[0] for key, timer in sorted(self._timers.items())}

    def fire_due(self) -> int:
        """Fire the timers whose time has come by the clock (an injected clock in tests)."""
        now = self._clock()
        due = [key for key, timer in self._timers.items() if timer[0] <= now]
        for key in due:
            _when, handle, job = self._timers.pop(key)
            handle.cancel()
            self.enqueue(job)
        return len(due)

    def cancel_all(self) -> None:
        for timer in self._timers.values():
            timer[1].cancel()
        self._timers.clear()
