"""The benchmarks' world: the bundled GitHub emulator and the real bot, over HTTP on loopback.

Two ways to run the bot:
- in this process (`bot.sandbox.stack.start_bot`, as the sandbox and the tests run it), for
  request counting and timing, where `conveyor.pool.wait_idle()` tells exactly when the bot's
  work is done;
- `BotProcess`: `python -m bot serve` as a child process, for acknowledgement latency and the
  burst, so that its memory and CPU are its own.

The emulator always runs in the benchmark process. Webhooks it emits are posted to the bot only
when `Stage.forward` is on; while a measurement wants to see one delivery's cost alone, they are
recorded and held, then replayed in order by `Stage.replay_held()`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bot.github.client import RetryPolicy
from bot.names import GATE_CHECK
from bot.runtime.settings import Settings
from bot.sandbox import stack
from bot.sandbox.demo import DEPLOY_REPO, Demo, digest_of, seed
from bot.sandbox.stack import BotServer, free_port, serve_environment, wait_healthy
from bot.serving.acknowledge import WEBHOOK_PATH
from conveyor_emulator import Emulator
from conveyor_emulator.events.webhooks import Delivery

SECRET = "benchmark-webhook-secret-0123456789"
START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday morning, outside any freeze
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Clock:
    """The bot's and the emulator's clock: real time is irrelevant to the counts, and timers
    (dashboard debounce, merge retries) are fired on purpose by `Stage.quiesce`."""

    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Stage:
    emulator: Emulator
    clock: Clock
    demo: Demo
    bot: BotServer | None = None
    session: aiohttp.ClientSession | None = None
    replayed: set[int] = field(default_factory=set)

    @property
    def repo(self) -> str:
        return DEPLOY_REPO

    # -- webhooks --------------------------------------------------------------------------------
    @property
    def forward(self) -> bool:
        return self.emulator.webhook_url is not None

    def hold(self) -> int:
        """Stop forwarding the emulator's webhooks; returns the index of the next delivery."""
        self.emulator.webhook_url = None
        return len(self.emulator.deliveries)

    async def post(self, delivery: Delivery, *, guid: str | None = None) -> int:
        """Sign and send one recorded delivery to the bot (its own id unless `guid`)."""
        assert self.bot is not None and self.session is not None
        body = json.dumps(delivery.payload, separators=(",", ":")).encode()
        headers = self.emulator.hooks.headers_for(delivery, body)
        if guid is not None:
            headers["X-GitHub-Delivery"] = guid
        self.replayed.add(delivery.id)
        async with self.session.post(self.bot.webhook_url, data=body,
                                     headers=headers) as response:
            await response.read()
            return response.status

    async def replay_held(self, since: int) -> None:
        """Forward again, and send the deliveries held since `since`, in order."""
        assert self.bot is not None
        self.emulator.webhook_url = self.bot.webhook_url
        held = [d for d in self.emulator.deliveries[since:]
                if not d.redelivery and d.status_code == 0 and d.id not in self.replayed]
        for delivery in held:
            await self.post(delivery)
        await self.quiesce()

    async def quiesce(self, rounds: int = 200) -> None:
        """Settle, firing the timers due within a minute (dashboard debounce, merge retries)
        until none is left."""
        assert self.bot is not None
        conveyor = self.bot.conveyor
        for _ in range(rounds):
            await stack.settle(self.emulator, conveyor)
            soon = [when for when in conveyor.ctx.scheduler.pending().values()
                    if when <= self.clock() + timedelta(seconds=60)]
            if not soon:
                return
            self.clock.now = max(self.clock.now, max(soon))
            conveyor.ctx.scheduler.fire_due()
        raise RuntimeError("the benchmark world did not settle")

    # -- acting as CI ------------------------------------------------------------------------------
    async def publish_image(self, service: str, version: str, *, attest: bool = True) -> str:
        """CI builds and pushes the image, attests it and records its run; no package event."""
        source = f"acme/{service}"
        digest = digest_of(f"{service}:{version}")
        await self.emulator.create_tag(source, f"v{version}")
        sha = self.emulator.commit(source, f"v{version}")["sha"]
        await self.emulator.publish_container("acme", service, digest, [version],
                                              source_repo=source, revision=sha, emit=False)
        self.emulator.add_workflow_run(source, sha, name="release", event="push")
        if attest:
            self.emulator.add_attestation(source, digest, commit=sha,
                                          ref=f"refs/tags/v{version}")
        return digest

    async def stop(self) -> None:
        if self.bot is not None:
            await self.bot.stop()
        if self.session is not None:
            await self.session.close()
        await self.emulator.stop()


async def start_stage(files: Mapping[str, str] | None = None) -> Stage:
    """The emulator with the demo organisation (or `files` as the deployment repository)."""
    clock = Clock()
    emulator = Emulator(webhook_secret=SECRET, validate_openapi=False, clock=clock)
    await emulator.start()
    demo = seed(emulator, files)
    # The recommended setup: the default branch requires the gate from Conveyor's app (a
    # ruleset), so no gate evaluation looks for reports named like it by others.
    emulator.add_ruleset(DEPLOY_REPO, [(GATE_CHECK, emulator.world.app_id)])
    # The version live in the demo manifests was released from a tag, like any other.
    for source in ("acme/web", "acme/api"):
        await emulator.create_tag(source, "v0.9.0")
    return Stage(emulator, clock, demo, session=aiohttp.ClientSession())


def bot_settings(stage: Stage, **overrides: Any) -> Settings:
    return stack.bot_settings(stage.emulator, SECRET,
                              **{"workers": 8, "log_level": "WARNING", **overrides})


async def start_bot(stage: Stage, *, forward: bool = True, workers: int = 8) -> BotServer:
    """A fresh bot (no token, no policy, no ETag cache) on an ephemeral port."""
    if stage.bot is not None:
        await stage.bot.stop()
    bot = await stack.start_bot(
        bot_settings(stage, workers=workers), clock=stage.clock,
        retry=RetryPolicy(base_delay=0.01, max_delay=0.05, request_timeout=10))
    stage.bot = bot
    stage.emulator.webhook_url = bot.webhook_url if forward else None
    return bot


# -- the bot as a child process ----------------------------------------------------------------
@dataclass
class ChildServer:
    """A server in a child process: `python -m bot serve`, or the bare baseline."""

    process: asyncio.subprocess.Process
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{WEBHOOK_PATH}"

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def memory(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak resident set) in kB from /proc, summed over the child and
        the processes it started (`python -m bot serve`'s workers and offload processes): a
        sum of peaks, at least the peak of the sum."""
        found: dict[str, int] = {}
        for pid in family(self.pid):
            status = Path(f"/proc/{pid}/status")
            try:
                lines = status.read_text().splitlines()
            except OSError:  # ended meanwhile
                continue
            for line in lines:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    found[key] = found.get(key, 0) + int(value.split()[0])
        return found

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(self.process.wait(), 30)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


def pss_kb(pid: int, *, descendants: bool = True) -> int:
    """Proportional set size of `pid` and its descendants (or of `pid` alone), in kB: each
    shared page counted once across them, unlike summed RSS."""
    total = 0
    for member in family(pid) if descendants else [pid]:
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return total


def family(pid: int) -> list[int]:
    """`pid` and its descendants, from /proc (Linux)."""
    found, look = [], [pid]
    while look:
        current = look.pop()
        found.append(current)
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        look.extend(int(child) for child in children)
    return found


async def _wait_healthy(server: ChildServer) -> None:
    if await wait_healthy(f"http://127.0.0.1:{server.port}",
                          lambda: server.process.returncode is None, 30.0):
        return
    if server.process.returncode is not None:
        raise RuntimeError(f"server exited early; see {server.log_path}")
    raise RuntimeError(f"server did not become healthy; see {server.log_path}")


async def _spawn(args: list[str], env: dict[str, str], port: int, name: str,
                 cpus: set[int] | None = None) -> ChildServer:
    workdir = Path(tempfile.mkdtemp(prefix=f"conveyor-bench-{name}-"))
    log_path = workdir / "server.log"
    with log_path.open("wb") as log_file:
        process = await asyncio.create_subprocess_exec(
            *args, cwd=workdir, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=log_file, stderr=log_file,
            # before the server starts, so that the processes it starts run there too
            preexec_fn=None if cpus is None else functools.partial(os.sched_setaffinity, 0, cpus),
        )
    return ChildServer(process, port, log_path)


def _child_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITHUB_", "CONVEYOR_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


async def spawn_bot(stage: Stage, *, log_level: str = "INFO",
                    cpus: set[int] | None = None) -> ChildServer:
    """`python -m bot serve` against the emulator, with production defaults otherwise; on
    the `cpus` given, with every process it starts."""
    port = free_port()
    env = _child_env(serve_environment(stage.emulator, SECRET, port, LOG_LEVEL=log_level))
    server = await _spawn([sys.executable, "-m", "bot", "serve"], env, port, "bot", cpus)
    await _wait_healthy(server)
    return server


async def spawn_bare(cpus: set[int] | None = None) -> ChildServer:
    """The baseline: an aiohttp handler that reads the body and answers 202."""
    port = free_port()
    server = await _spawn([sys.executable, "-m", "benchmarks.bare", str(port), WEBHOOK_PATH],
                          _child_env({}), port, "bare", cpus)
    await _wait_healthy(server)
    return server
