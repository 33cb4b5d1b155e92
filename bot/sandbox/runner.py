"""The sandbox's machinery: the bundled GitHub emulator and the real bot, talking over loopback.

Both run in this process on 127.0.0.1 with random ports, share one clock that the story moves
forward by hand (so "30 minutes pass" takes no time), and use a webhook secret generated for
the run and the emulator's own app key: no settings, no network.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web

from conveyor_emulator import Emulator

from ..github.client import RetryPolicy
from ..handlers import build_router
from ..logs import JsonFormatter, register_secret
from ..registry.names import repository_of
from ..server import WEBHOOK_PATH, Runtime, create_app, runtime_of
from ..settings import Settings

# Monday 10:00 UTC: outside the usual freeze windows, so a policy's freeze does not stall the
# story unless it really covers a Monday morning.
STORY_START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


class SandboxError(Exception):
    """The sandbox could not do what the story needed."""


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
class Sandbox:
    emulator: Emulator
    runtime: Runtime
    clock: SandboxClock
    secret: str
    webhook_url: str
    runner: web.AppRunner

    @property
    def api_url(self) -> str:
        return self.emulator.base_url

    async def settle(self, rounds: int = 500) -> None:
        """Wait until no webhook is in flight and the bot's queue is drained, twice in a row."""
        quiet = 0
        for _ in range(rounds):
            await self.emulator.settle()
            await self.runtime.pool.wait_idle()
            await asyncio.sleep(0.005)
            busy = (not self.runtime.pool.idle or self.runtime.ctx.scheduler.offering
                    or self.emulator.pending_deliveries())
            quiet = 0 if busy else quiet + 1
            if quiet >= 2:
                return
        raise SandboxError("the bot and the emulator did not become idle")

    async def pass_time(self, delta: timedelta) -> int:
        """Move the shared clock and fire the bot's timers that came due; returns how many."""
        self.clock.advance(delta)
        fired = self.runtime.ctx.scheduler.fire_due()
        await self.settle()
        return fired

    async def close(self) -> None:
        await self.runner.cleanup()
        await self.emulator.stop()


async def start_sandbox(*, clock: SandboxClock | None = None, workers: int = 4,
                        registries: Iterable[str] = ()) -> Sandbox:
    """Start the emulator and the bot; the caller seeds the emulator and wires nothing else.
    The emulator serves the images of ghcr.io and of every registry host in `registries`."""
    clock = clock or SandboxClock()
    secret = secrets.token_hex(20)
    register_secret(secret)
    emulator = Emulator(webhook_secret=secret, clock=clock)
    api_url = await emulator.start()
    register_secret(emulator.app_private_key_pem.strip())
    settings = Settings(
        app_id=str(emulator.app_id), private_key=emulator.app_private_key_pem,
        webhook_secret=secret, api_url=api_url, host="127.0.0.1", port=0,
        log_level="INFO", resync_interval=0, workers=workers, shutdown_grace=5,
        registry_endpoints={host: emulator.web_url for host in {"ghcr.io", *registries}},
    )
    app = create_app(settings, build_router(), clock=clock,
                     retry=RetryPolicy(base_delay=0.01, max_delay=0.1, request_timeout=10))
    runner = web.AppRunner(app, access_log=None)
    try:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
    except BaseException:
        await runner.cleanup()
        await emulator.stop()
        raise
    addresses = runner.addresses
    if not addresses:
        await runner.cleanup()
        await emulator.stop()
        raise SandboxError("the bot's server did not open a socket")
    port = int(addresses[0][1])
    webhook_url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    emulator.webhook_url = webhook_url
    return Sandbox(emulator, runtime_of(app), clock, secret, webhook_url, runner)


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


def image_parts(image: str) -> tuple[str, str, str]:
    """`ghcr.io/acme/web` → (registry, owner, package); the package may hold slashes. Docker
    Hub's short names read as the registry does: `nginx` is docker.io's `library/nginx`."""
    try:
        repository = repository_of(image)
    except ValueError as exc:
        raise SandboxError(f"{image}: {exc}") from None
    owner, _, package = repository.name.partition("/")
    if not owner or not package:
        raise SandboxError(f"{image}: expected REGISTRY/OWNER/NAME")
    return repository.host, owner, package
