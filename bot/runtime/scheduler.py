"""Timers that feed internal jobs into the same queue as webhooks (soak and freeze ends).

Timers live in memory only: after a restart the resync re-creates them from GitHub state.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bot.runtime.queue import DeliveryQueue, Job

log = logging.getLogger(__name__)

INTERNAL_PREFIX = "conveyor."


class Scheduler:
    def __init__(self, queue: DeliveryQueue, clock: Callable[[], datetime]) -> None:
        self._queue = queue
        self._clock = clock
        self._timers: dict[str, tuple[datetime, asyncio.TimerHandle, str, dict[str, Any]]] = {}
        self._offers: set[asyncio.Task[None]] = set()

    def enqueue(self, event: str, payload: dict[str, Any]) -> None:
        """Offer an internal job to the queue (from a timer callback, so in a task)."""
        job = Job.of(f"internal-{uuid.uuid4()}", INTERNAL_PREFIX + event, payload)
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

    def at(self, key: str, when: datetime, event: str, payload: dict[str, Any]) -> None:
        """Enqueue `event` at `when`; a later call with the same key replaces the timer."""
        delay = max(0.0, (when - self._clock()).total_seconds())
        loop = asyncio.get_running_loop()
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous[1].cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            self.enqueue(event, payload)

        self._timers[key] = (when, loop.call_later(delay, fire), event, payload)

    def pending(self) -> dict[str, datetime]:
        return {key: timer[0] for key, timer in sorted(self._timers.items())}

    def fire_due(self) -> int:
        """Fire the timers whose time has come by the clock (an injected clock in tests)."""
        now = self._clock()
        due = [key for key, timer in self._timers.items() if timer[0] <= now]
        for key in due:
            _when, handle, event, payload = self._timers.pop(key)
            handle.cancel()
            self.enqueue(event, payload)
        return len(due)

    def cancel_all(self) -> None:
        for timer in self._timers.values():
            timer[1].cancel()
        self._timers.clear()
