"""A world for behaviour tests: the GitHub emulator and the real bot, over HTTP on loopback."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.github.client import RetryPolicy
from bot.registry.client import RegistryPolicy
from bot.sandbox.demo import DEPLOY_REPO, Demo, release, seed
from bot.sandbox.stack import Stack, bot_settings, start_bot_for
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
class World(Stack):
    clock: Clock
    demo: Demo
    published: dict[str, str] = field(default_factory=dict)
    time: VirtualTime = field(default_factory=VirtualTime)

    SETTLE_PAUSE = 0.01

    @property
    def repo(self) -> str:
        return DEPLOY_REPO

    async def release(self, service: str, version: str, *, publish_image: bool = True,
                      author: str = "alice", prerelease: bool = False,
                      tag_prefix: str = "v") -> str:
        """CI publishes the image, then someone publishes the release: returns the digest."""
        digest = await release(self.emulator, service, version, tag=f"{tag_prefix}{version}",
                               author=author, prerelease=prerelease,
                               publish_image=publish_image)
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


FAST_RETRY = RetryPolicy(base_delay=0.01, max_delay=0.05, request_timeout=5)
QUICK_REGISTRY = RegistryPolicy(timeout=5, base_delay=0.01, max_delay=0.05)


def commit_signing() -> bool:
    """Whether the emulated GitHub signs the commits of API writes and merges: github.com
    does; `CONVEYOR_TEST_SIGNING=off` plays a GitHub Enterprise Server without web commit
    signing (CI runs the behaviour tests both ways)."""
    return os.environ.get("CONVEYOR_TEST_SIGNING", "on").lower() != "off"


async def make_world(*, files: Mapping[str, str] | None = None, workers: int = 4,
                     validate_openapi: bool = True, retry: RetryPolicy = FAST_RETRY,
                     registry_policy: RegistryPolicy | None = QUICK_REGISTRY,
                     source_repos: tuple[str, ...] = (), signing: bool | None = None,
                     rate_limiting: bool = True, **settings: Any) -> World:
    """The demo organisation (or `files` as its deployment repository, and `source_repos`
    besides) on the emulator, and the bot with `settings` over the test defaults. ``signing``
    None follows `commit_signing()`; ``rate_limiting`` False plays a GitHub Enterprise Server
    without rate limits."""
    clock = Clock()
    virtual = VirtualTime()
    emulator = Emulator(webhook_secret=SECRET, validate_openapi=validate_openapi, clock=clock,
                        timer=virtual,
                        web_commit_signing=commit_signing() if signing is None else signing,
                        rate_limiting=rate_limiting)
    await emulator.start()
    for repo in source_repos:
        emulator.add_repo(repo, files={"README.md": f"# {repo}\n"})
    demo = seed(emulator, files)
    for repo in source_repos:
        installation = emulator.world.installations[demo.installation_id]
        assert installation.repo_ids is not None
        installation.repo_ids.add(emulator.world.repo_by_name(repo).id)
    bot = await start_bot_for(emulator, bot_settings(emulator, SECRET, workers=workers,
                                                      **settings),
                              clock=clock, timer=virtual, retry=retry,
                              registry_policy=registry_policy)
    return World(emulator, bot, clock, demo, time=virtual)


async def close_world(world: World) -> None:
    await world.close()


async def hand_pr(world: World, path: str, text: str, *, author: str = "alice",
                  branch: str = "hand/prod-change", title: str = "Bump production by hand"
                  ) -> dict[str, Any]:
    """A person edits a file on a branch and opens a PR."""
    await world.emulator.push_files(DEPLOY_REPO, {path: text}, branch=branch, author=author,
                                    message=title)
    await world.emulator.open_pull(DEPLOY_REPO, branch, title=title, author=author)
    await world.settle()
    return world.pull(title, state="open")


async def open_unseen_notes(world: World, count: int) -> None:
    """``count`` newer open PRs, each adding a note no policy path names, whose events never
    reach Conveyor: they push older PRs out of the newest ones a push re-runs."""
    url, world.emulator.webhook_url = world.emulator.webhook_url, None
    for n in range(count):
        branch = f"hand/note-{n}"
        await world.emulator.push_files(DEPLOY_REPO, {f"notes/{n}.md": f"note {n}\n"},
                                        branch=branch, author="alice", message=f"note {n}")
        await world.emulator.open_pull(DEPLOY_REPO, branch, title=f"Note {n}", author="alice")
    world.emulator.webhook_url = url


def pinned_kustomization(tag: str, digest: str) -> str:
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "  - ../../base\nimages:\n  - name: ghcr.io/acme/web\n"
        f'    newTag: "{tag}"  # promoted by Conveyor\n    digest: {digest}\n'
    )
