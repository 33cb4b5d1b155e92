"""SIGKILL in the middle of a promotion: the next process's start-up resync finishes it.

The bot runs as a real `python -m bot serve` subprocess against the in-process emulator, with
latency on every API request so that work is in flight when the process dies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox.demo import DEPLOY_REPO, release, seed
from conveyor_emulator import Emulator
from tests.botprocess import BotProcess
from tests.harness import SECRET
from tests.reliability.support import (
    assert_no_half_made_branches,
    assert_one_pr_per_promotion,
    promotion_counts,
    wait_for,
)

SERVICES = ("web", "api")


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def half_made(emulator: Emulator) -> list[str]:
    with_pr = {pr["head"]["ref"] for pr in emulator.pulls(DEPLOY_REPO, state="all")}
    return [b for b in emulator.branches(DEPLOY_REPO)
            if b.startswith("conveyor/") and b not in with_pr]


async def test_sigkill_mid_flow_then_restart_finishes_every_promotion(workdir: Path) -> None:
    emulator = Emulator(webhook_secret=SECRET)  # real time: the bot process uses its own clock
    await emulator.start()
    seed(emulator)
    first = second = None
    try:
        # resync 3600: one at start-up, then none during the test
        first = BotProcess(emulator, workdir, "first", resync=3600)
        await first.wait_healthy()
        await wait_for(lambda: emulator.requests.count("GET", "/app/installations") > 0,
                       within=10)
        emulator.faults.latency = 0.2  # every API request is slow: work is in flight
        emulator.webhook_url = first.webhook_url
        digests = {service: await release(emulator, service, "1.0.0") for service in SERVICES}

        # Kill the moment a promotion branch exists but its PR does not.
        assert await wait_for(lambda: bool(half_made(emulator)), within=30, interval=0.002), (
            first.log_path.read_text())
        first.kill()
        leftovers = half_made(emulator)
        assert leftovers
        emulator.webhook_url = None  # nobody listens until the new process is up
        await asyncio.sleep(0.5)  # requests the dead process had sent are answered
        assert not any(pr["head"]["ref"] in leftovers
                       for pr in emulator.pulls(DEPLOY_REPO, state="all"))

        emulator.faults.latency = 0.0
        emulator.reset_counters()
        second = BotProcess(emulator, workdir, "second", resync=3600)
        await second.wait_healthy()
        emulator.webhook_url = second.webhook_url

        def done() -> bool:
            counts = promotion_counts(emulator)
            return all(counts[(s, "staging", d)] == 1 for s, d in digests.items()) and all(
                pr["merged"] for pr in emulator.pulls(DEPLOY_REPO, state="all"))

        assert await wait_for(done, within=30, interval=0.1), (
            promotion_counts(emulator), second.log_path.read_text()[-4000:])
        await emulator.settle()
        assert_one_pr_per_promotion(emulator)
        assert_no_half_made_branches(emulator)
        heads = {pr["head"]["ref"] for pr in emulator.pulls(DEPLOY_REPO, state="all")}
        assert set(leftovers) <= heads  # the leftover branch was reused, not abandoned
        # The new process reset the leftover branch instead of failing on it.
        assert emulator.requests.count("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}") >= 1
        for service, digest in digests.items():
            path = ("apps/web/overlays/staging/kustomization.yaml" if service == "web"
                    else "charts/api/values-staging.yaml")
            text = emulator.file(DEPLOY_REPO, path)
            assert text is not None and digest in text
        # A graceful stop: in-flight work drains and the process exits cleanly.
        assert await second.stop_async() == 0, second.log_path.read_text()[-2000:]
    finally:
        for process in (first, second):
            if process is not None and process.process.poll() is None:
                await process.stop_async()
        await emulator.stop()
