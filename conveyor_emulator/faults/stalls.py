"""When the emulator's own event loop could not take requests in.

A request's arrival is stamped when its handler starts. While the loop is busy elsewhere (a
large answer being built, the test process's own work on a loaded machine), a request whose
bytes are already in the socket is stamped late, and one a bot sent before it read a
secondary-limit 403 can look as if it had been sent inside the window that answer opened.
The watcher below sleeps a few milliseconds at a time and records each wake-up that came late
by more than `THRESHOLD` as a stall, so that a check can tell the emulator's lateness from
the bot's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

TICK = 0.01
THRESHOLD = 0.02


@dataclass
class Stalls:
    """Spans (start, end), on the emulator's rate-limit timer, during which its loop was
    late by more than `THRESHOLD`."""

    timer: Callable[[], float] = time.time
    spans: list[tuple[float, float]] = field(default_factory=list)

    async def watch(self, tick: float = TICK) -> None:
        """Runs until cancelled."""
        while True:
            asked = time.monotonic()
            await asyncio.sleep(tick)
            late = time.monotonic() - asked - tick
            if late > THRESHOLD:
                now = self.timer()
                self.spans.append((now - late, now))

    def within(self, start: float, end: float) -> float:
        """Seconds of stall between ``start`` and ``end``."""
        return sum(max(0.0, min(end, until) - max(start, since))
                   for since, until in self.spans)
