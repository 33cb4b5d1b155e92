"""A world for behaviour tests: the GitHub emulator and the real bot, over HTTP on loopback."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from bot.github.client import RetryPolicy
from bot.handlers import build_router
from bot.registry.client import RegistryPolicy
from bot.sandbox.demo import DEPLOY_REPO, Demo, digest_of, seed
from bot.server import Runtime, create_app, runtime_of
from bot.settings import Settings
from conveyor_emulator import Emulator

SECRET = "test-webhook-secret-1234"
START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday morning


@dataclass
class Clock:
    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


class VirtualTime:
    """Epoch seconds that pass only while someone waits: shared by the bot's rate limiter (its
    waits, pacing and backoffs) and the emulator's rate-limit windows, so that a test honours a
    minute-long wait without sleeping for it."""

    def __init__(self, start: float | None = None) -> None:
        self.value = time.time() if start is None else start
        self.slept = 0.0
        self.in_flight = 0

    def now(self) -> float:
        return self.value

    def __call__(self) -> float:
        return self.value

    async def sleep(self, seconds: float) -> None:
        wake = self.value + max(0.0, seconds)
        self.slept += max(0.0, seconds)
        await asyncio.sleep(0)
        # Time does not jump while a request someone counted in `in_flight` travels: it
        # arrives at the time it was sent, as it would in real time.
        while self.in_flight:  # noqa: ASYNC110 - a counter, polled; an Event would add nothing
            await asyncio.sleep(0.001)
        self.value = max(self.value, wake)


@dataclass
class World:
    emulator: Emulator
    runtime: Runtime
    clock: Clock
    demo: Demo
    webhook_url: str
    runner: web.AppRunner
    published: dict[str, str] = field(default_factory=dict)
    time: VirtualTime = field(default_factory=VirtualTime)

    @property
    def repo(self) -> str:
        return DEPLOY_REPO

    async def settle(self, rounds: int = 50) -> None:
        """Until no webhook is in flight and the bot's queue is drained, twice in a row."""
        quiet = 0
        for _ in range(rounds * 10):
            await self.emulator.settle()
            await self.runtime.pool.wait_idle()
            await asyncio.sleep(0.01)
            busy = (not self.runtime.pool.idle or self.runtime.ctx.scheduler.offering
                    or self.emulator.pending_deliveries())
            quiet = 0 if busy else quiet + 1
            if quiet >= 2:
                return
        raise AssertionError("the world did not settle")

    async def release(self, service: str, version: str, *, publish_image: bool = True,
                      author: str = "alice", prerelease: bool = False,
                      tag_prefix: str = "v") -> str:
        """CI publishes the image, then someone publishes the release: returns the digest."""
        source = f"acme/{service}"
        digest = digest_of(f"{service}:{version}")
        if publish_image:
            await self.emulator.publish_container(
                "acme", service, digest, [version], source_repo=source,
            )
        await self.emulator.create_tag(source, f"{tag_prefix}{version}")
        await self.emulator.publish_release(source, f"{tag_prefix}{version}", author=author,
                                            prerelease=prerelease)
        await self.settle()
        self.published[f"{service}:{version}"] = digest
        return digest

    def open_pulls(self) -> list[dict[str, Any]]:
        return self.emulator.pulls(DEPLOY_REPO, state="open")

    def pull(self, title_part: str, state: str = "all") -> dict[str, Any]:
        matches = [pr for pr in self.emulator.pulls(DEPLOY_REPO, state=state)
                   if title_part in pr["title"]]
        assert len(matches) == 1, [pr["title"] for pr in matches]
        return matches[0]

    def gate(self, pr: dict[str, Any]) -> dict[str, Any]:
        runs = self.emulator.check_runs(DEPLOY_REPO, pr["head"]["sha"],
                                        "conveyor/promotion-gate")
        assert len(runs) == 1, runs
        return runs[0]


async def make_world(*, files: dict[str, str] | None = None, workers: int = 4,
                     validate_openapi: bool = True) -> World:
    clock = Clock()
    virtual = VirtualTime()
    emulator = Emulator(webhook_secret=SECRET, validate_openapi=validate_openapi, clock=clock,
                        timer=virtual)
    api_url = await emulator.start()
    demo = seed(emulator, files)
    settings = Settings(
        app_id=str(emulator.app_id), private_key=emulator.app_private_key_pem,
        webhook_secret=SECRET, api_url=api_url, host="127.0.0.1", port=0,
        resync_interval=0, workers=workers,
        registry_endpoints={"ghcr.io": emulator.web_url},  # the emulator serves ghcr.io
    )
    app = create_app(settings, build_router(), clock=clock, timer=virtual,
                     retry=RetryPolicy(base_delay=0.01, max_delay=0.05, request_timeout=5),
                     registry_policy=RegistryPolicy(timeout=5, base_delay=0.01, max_delay=0.05))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    webhook_url = f"http://127.0.0.1:{port}/api/github/webhooks"
    emulator.webhook_url = webhook_url
    return World(emulator, runtime_of(app), clock, demo, webhook_url, runner, time=virtual)


async def close_world(world: World) -> None:
    await world.runner.cleanup()
    await world.emulator.stop()


async def hand_pr(world: World, path: str, text: str, *, author: str = "alice",
                  branch: str = "hand/prod-change", title: str = "Bump production by hand"
                  ) -> dict[str, Any]:
    """A person edits a file on a branch and opens a PR."""
    await world.emulator.push_files(DEPLOY_REPO, {path: text}, branch=branch, author=author,
                                    message=title)
    await world.emulator.open_pull(DEPLOY_REPO, branch, title=title, author=author)
    await world.settle()
    return world.pull(title, state="open")


def pinned_kustomization(tag: str, digest: str) -> str:
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "  - ../../base\nimages:\n  - name: ghcr.io/acme/web\n"
        f'    newTag: "{tag}"  # promoted by Conveyor\n    digest: {digest}\n'
    )
