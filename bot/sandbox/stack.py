"""The bot and the bundled GitHub emulator wired together on loopback.

One launcher for the sandbox, the behaviour tests and the benchmarks: the bot's settings for an
emulator, the bot's app served on an ephemeral port, `settle()` (until neither side has work
left) and what GitHub sees when a version ships. For a bot in a child process
(`python -m bot serve`): the environment that makes it the emulator's app, and the wait until
it serves.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

import aiohttp
from aiohttp import web

from bot.attestations.trustfile import TrustFile
from bot.github.client import RetryPolicy
from bot.github.ratelimit import Timer
from bot.registry.client import RegistryPolicy
from bot.registry.names import repository_of
from bot.runtime.settings import Settings
from bot.serving.acknowledge import WEBHOOK_PATH
from bot.serving.composition import Overrides
from bot.serving.server import Conveyor, conveyor_of, create_app
from conveyor_emulator import Emulator

GHCR = "ghcr.io"
LOOPBACK = "127.0.0.1"


class SandboxError(Exception):
    """The sandbox could not do what the story needed."""


def bot_settings(emulator: Emulator, webhook_secret: str, **overrides: Any) -> Settings:
    """Settings of a bot that is the emulator's app: its key, its API, its registry standing in
    for ghcr.io; on loopback, an ephemeral port, no periodic resync. `overrides` win."""
    values: dict[str, Any] = {
        "app_id": str(emulator.app_id), "private_key": emulator.app_private_key_pem,
        "webhook_secret": webhook_secret, "api_url": emulator.base_url,
        "host": LOOPBACK, "port": 0, "resync_interval": 0,
        "registry_endpoints": {GHCR: emulator.web_url},
        "sigstore_trust": TrustFile("the emulator's Sigstore", emulator.sigstore_trusted_roots()),
    }
    values.update(overrides)
    return Settings(**values)


async def serve(app: web.Application, host: str = LOOPBACK) -> tuple[web.AppRunner, int]:
    """Serve `app` on an ephemeral port of `host`; the runner (to clean up) and the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, 0).start()
    except BaseException:
        await runner.cleanup()
        raise
    addresses = runner.addresses
    if not addresses:
        await runner.cleanup()
        raise SandboxError("the server did not open a socket")
    return runner, int(addresses[0][1])


def free_port(host: str = LOOPBACK) -> int:
    """A port nothing listens on now, for a server in another process to bind."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def serve_environment(emulator: Emulator, webhook_secret: str, port: int,
                      **overrides: str) -> dict[str, str]:
    """The environment variables of a `python -m bot serve` that is the emulator's app (as
    `bot_settings`, on `port`); `overrides` win."""
    return {
        "GITHUB_APP_ID": str(emulator.app_id),
        "GITHUB_PRIVATE_KEY": emulator.app_private_key_pem,
        "GITHUB_WEBHOOK_SECRET": webhook_secret,
        "GITHUB_API_URL": emulator.base_url,
        "CONVEYOR_REGISTRY_ENDPOINTS": f"{GHCR}={emulator.web_url}",
        "CONVEYOR_SIGSTORE_TRUST": emulator.sigstore_trust_file(),
        "HOST": LOOPBACK, "PORT": str(port), "CONVEYOR_RESYNC_INTERVAL": "0",
        **overrides,
    }


async def wait_healthy(base_url: str, running: Callable[[], bool], within: float) -> bool:
    """Poll `GET /healthz` until it answers 200 (True); False once `running()` is false or
    `within` seconds passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    async with aiohttp.ClientSession() as session:
        while loop.time() < deadline and running():
            try:
                async with session.get(f"{base_url}/healthz") as response:
                    if response.status == 200:
                        return True
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    return False


@dataclass
class BotServer:
    """The bot's app (`create_app`) served on loopback."""

    conveyor: Conveyor
    runner: web.AppRunner
    port: int

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def webhook_url(self) -> str:
        return f"{self.base_url}{WEBHOOK_PATH}"

    async def stop(self) -> None:
        await self.runner.cleanup()


async def start_bot(settings: Settings, *, clock: Callable[[], datetime], retry: RetryPolicy,
                    timer: Timer | None = None,
                    registry_policy: RegistryPolicy | None = None) -> BotServer:
    """The bot with every handler, serving on an ephemeral loopback port."""
    app = create_app(settings, Overrides(clock=clock, retry=retry, timer=timer,
                                         registry_policy=registry_policy))
    runner, port = await serve(app)
    return BotServer(conveyor_of(app), runner, port)


async def settle(emulator: Emulator, conveyor: Conveyor, *, rounds: int = 500,
                 pause: float = 0.005) -> None:
    """Until no webhook is in flight, the bot's queue is drained and no timer is being handed
    to it, twice in a row `pause` seconds apart; at most `rounds` checks."""
    quiet = 0
    for _ in range(rounds):
        await emulator.settle()
        await conveyor.pool.wait_idle()
        await asyncio.sleep(pause)
        busy = (not conveyor.pool.idle or conveyor.ctx.scheduler.offering
                or emulator.pending_deliveries())
        quiet = 0 if busy else quiet + 1
        if quiet >= 2:
            return
    raise SandboxError("the bot and the emulator did not become idle")


@dataclass
class Stack:
    """The emulator and one bot that receives its webhooks."""

    emulator: Emulator
    bot: BotServer

    # between two checks of `settle`: long enough for a webhook the bot's work caused to leave
    SETTLE_PAUSE: ClassVar[float] = 0.005

    @property
    def conveyor(self) -> Conveyor:
        return self.bot.conveyor

    @property
    def webhook_url(self) -> str:
        return self.bot.webhook_url

    async def settle(self, rounds: int = 500) -> None:
        await settle(self.emulator, self.bot.conveyor, rounds=rounds, pause=self.SETTLE_PAUSE)

    async def close(self) -> None:
        await self.bot.stop()
        await self.emulator.stop()


async def start_bot_for(emulator: Emulator, settings: Settings, **bot_options: Any
                      ) -> BotServer:
    """Start a bot (`start_bot` with `bot_options`) and point the emulator's webhooks at it;
    the emulator is stopped if the bot cannot start."""
    try:
        bot = await start_bot(settings, **bot_options)
    except BaseException:
        await emulator.stop()
        raise
    emulator.webhook_url = bot.webhook_url
    return bot


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


async def publish_release(emulator: Emulator, image: str, source: str, version: str,
                          digest: str, *, tag: str | None = None, author: str = "alice",
                          prerelease: bool = False, publish_image: bool = True,
                          provenance: bool = False) -> None:
    """What GitHub sees when `version` ships: CI pushes `image` at `digest` tagged `version`
    (only ghcr.io images send registry_package events) and, with `provenance`, leaves its
    workflow run and the image's build attestation; then `author` tags `source` (`tag`,
    default v`version`) and publishes the release."""
    registry, owner, package = image_parts(image)
    tag = tag if tag is not None else f"v{version}"
    if publish_image:
        commit = None
        if provenance:
            branch = emulator.world.repo_by_name(source).default_branch
            commit = emulator.commit(source, branch)["sha"]
            run = emulator.add_workflow_run(source, commit, name="release")
            emulator.add_attestation(source, digest, commit=commit, ref=f"refs/tags/{tag}",
                                     run_id=int(run["id"]))
        await emulator.publish_container(owner, package, digest, [version], source_repo=source,
                                         revision=commit, emit=registry == GHCR)
    await emulator.create_tag(source, tag, user=author)
    await emulator.publish_release(source, tag, author=author, prerelease=prerelease)
