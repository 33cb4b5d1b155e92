"""The sandbox's machinery: the bundled GitHub emulator and the real bot, talking over loopback.

Both run in this process on 127.0.0.1 with random ports, share one clock that the story moves
forward by hand (so "30 minutes pass" takes no time), and use a webhook secret generated for
the run and the emulator's own app key: no settings, no network.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.github.client import RetryPolicy
from bot.runtime.logs import JsonFormatter, register_secret
from bot.sandbox.stack import GHCR, Stack, bot_settings, start_bot_for
from conveyor_emulator import Emulator

# Monday 10:00 UTC: outside the usual freeze windows, so a policy's freeze does not stall the
# story unless it really covers a Monday morning.
STORY_START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


@dataclass
class SandboxClock:
    """The one clock of the emulator and the bot.

    Stopped while the story plays (only the story moves it, so "30 minutes pass" takes no
    time); `run()` lets it follow real time from where the story left it (`--keep`).
    """

    start: datetime = STORY_START
    now: datetime = STORY_START
    _running_since: float | None = None

    def __call__(self) -> datetime:
        if self._running_since is None:
            return self.now
        return self.now + timedelta(seconds=time.monotonic() - self._running_since)

    def advance(self, delta: timedelta) -> None:
        self.now += delta

    def run(self) -> None:
        if self._running_since is None:
            self._running_since = time.monotonic()


@dataclass
class Sandbox(Stack):
    clock: SandboxClock
    secret: str

    @property
    def api_url(self) -> str:
        return self.emulator.base_url

    async def pass_time(self, delta: timedelta) -> int:
        """Move the shared clock and fire the bot's timers that came due; returns how many."""
        self.clock.advance(delta)
        fired = self.conveyor.ctx.scheduler.fire_due()
        await self.settle()
        return fired


async def start_sandbox(*, clock: SandboxClock | None = None, workers: int = 4,
                        registries: Iterable[str] = ()) -> Sandbox:
    """Start the emulator and the bot; the caller seeds the emulator and wires nothing else.
    The emulator serves the images of ghcr.io and of every registry host in `registries`."""
    clock = clock or SandboxClock()
    secret = secrets.token_hex(20)
    register_secret(secret)
    emulator = Emulator(webhook_secret=secret, clock=clock)
    await emulator.start()
    register_secret(emulator.app_private_key_pem.strip())
    settings = bot_settings(
        emulator, secret, log_level="INFO", workers=workers, shutdown_grace=5,
        registry_endpoints={host: emulator.web_url for host in {GHCR, *registries}})
    bot = await start_bot_for(emulator, settings, clock=clock,
                              retry=RetryPolicy(base_delay=0.01, max_delay=0.1,
                                                request_timeout=10))
    return Sandbox(emulator, bot, clock, secret)


@contextmanager
def logs_to_file(folder: Path, level: str = "INFO") -> Iterator[Path]:
    """Send every log record to a JSON-lines file in `folder` instead of the console, for the
    duration; yields the file's path. The previous handlers come back afterwards."""
    path = folder / "conveyor.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(level)
    try:
        yield path
    finally:
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        handler.close()
