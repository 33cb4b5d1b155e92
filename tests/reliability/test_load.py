"""A burst of deliveries: every one answered in time, none lost, memory bounded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp

from bot.runtime.settings import load_settings
from conveyor_emulator.apps.auth import generate_private_key
from tests.harness import SECRET, World, close_world
from tests.reliability.support import build_world, metric_samples, post_signed

BURST = 1000
GITHUB_TIMEOUT = 10.0


def burst_payloads(world: World, count: int) -> list[tuple[str, dict[str, Any]]]:
    """Handled and unhandled events in a mix, as a busy organisation sends them."""
    installation = {"id": world.demo.installation_id}
    deploy = {"id": 1, "full_name": world.repo, "name": "deploy", "owner": {"login": "acme"},
              "default_branch": "main"}
    source = {"id": 2, "full_name": "acme/web", "name": "web", "owner": {"login": "acme"},
              "default_branch": "main"}
    bot = {"login": "renovate[bot]", "type": "Bot", "id": 9}
    shapes: list[tuple[str, dict[str, Any]]] = [
        # a bot's comment: handled (accepted), then ignored by the command handler
        ("issue_comment", {"action": "created", "installation": installation,
                           "repository": deploy, "sender": bot,
                           "issue": {"number": 1, "pull_request": None},
                           "comment": {"id": 1, "body": "/help", "user": bot}}),
        # a push to a feature branch of a source repository: handled, nothing to do
        ("push", {"ref": "refs/heads/feature", "installation": installation,
                  "repository": source, "sender": bot, "commits": [], "deleted": False}),
        ("ping", {"zen": "Keep it logically awesome.", "hook_id": 1}),
        ("star", {"action": "created", "installation": installation, "repository": source,
                  "sender": bot}),
    ]
    return [shapes[i % len(shapes)] for i in range(count)]


async def test_a_burst_of_1000_deliveries_is_answered_in_time_and_fully_accounted() -> None:
    world = await build_world()
    try:
        payloads = burst_payloads(world, BURST)
        durations: list[float] = []
        statuses: list[int] = []
        limit = asyncio.Semaphore(100)
        connector = aiohttp.TCPConnector(limit=100)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def deliver(index: int, event: str, payload: dict[str, Any]) -> None:
                async with limit:
                    started = time.monotonic()
                    status = await post_signed(session, world.webhook_url, event, payload,
                                               f"load-{index}")
                    durations.append(time.monotonic() - started)
                    statuses.append(status)

            started = time.monotonic()
            await asyncio.gather(*(deliver(i, event, payload)
                                   for i, (event, payload) in enumerate(payloads)))
            elapsed = time.monotonic() - started
            await world.conveyor.pool.wait_idle()
            async with session.get(world.webhook_url.replace("/api/github/webhooks",
                                                             "/metrics")) as response:
                metrics = await response.text()

        assert len(statuses) == BURST
        assert all(200 <= status < 300 for status in statuses), sorted(set(statuses))
        assert max(durations) < GITHUB_TIMEOUT, max(durations)
        deliveries = metric_samples(metrics, "conveyor_deliveries_total")
        assert sum(deliveries.values()) == BURST, deliveries
        by_outcome: dict[str, float] = {}
        for labels, value in deliveries.items():
            outcome = dict(labels)["outcome"]
            by_outcome[outcome] = by_outcome.get(outcome, 0) + value
        assert by_outcome == {"accepted": BURST / 2, "pong": BURST / 4, "ignored": BURST / 4}
        processed = metric_samples(metrics, "conveyor_processing_seconds_count")
        assert sum(processed.values()) == BURST / 2  # every accepted delivery was worked off
        assert not metric_samples(metrics, "conveyor_handler_errors_total")
        assert elapsed < 30, elapsed
    finally:
        await close_world(world)


async def test_a_full_queue_answers_503_and_never_drops_silently() -> None:
    configured = load_settings({"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": SECRET,
                                "GITHUB_PRIVATE_KEY": generate_private_key()[0],
                                "CONVEYOR_QUEUE_SIZE": "3", "CONVEYOR_WORKERS": "1"},
                               dotenv=Path("/nonexistent/.env"))
    assert (configured.queue_size, configured.workers) == (3, 1)
    world = await build_world(queue_size=configured.queue_size, workers=configured.workers)
    try:
        world.emulator.faults.latency = 0.05  # every job makes a few slow API requests
        deploy = {"id": 1, "full_name": world.repo, "name": "deploy",
                  "owner": {"login": "acme"}, "default_branch": "main"}
        payload = {"ref": "refs/heads/main", "installation": {"id": world.demo.installation_id},
                   "repository": deploy, "sender": {"login": "alice", "type": "User"},
                   "commits": [], "deleted": False}
        depths: list[int] = []
        async with aiohttp.ClientSession() as session:

            async def deliver(index: int) -> int:
                status = await post_signed(session, world.webhook_url, "push", payload,
                                           f"full-{index}")
                depths.append(world.conveyor.queue.depth())
                return status

            statuses = await asyncio.gather(*(deliver(i) for i in range(40)))
            await world.conveyor.pool.wait_idle()
            async with session.get(world.webhook_url.replace("/api/github/webhooks",
                                                             "/metrics")) as response:
                metrics = await response.text()

        assert set(statuses) <= {202, 503}
        accepted, refused = statuses.count(202), statuses.count(503)
        assert refused > 0 and accepted >= 3
        assert max(depths) <= 3  # memory stays bounded by the queue size
        outcomes = {dict(k)["outcome"]: v for k, v in
                    metric_samples(metrics, "conveyor_deliveries_total").items()}
        assert outcomes == {"accepted": accepted, "queue_full": refused}
        processed = metric_samples(metrics, "conveyor_processing_seconds_count")
        assert sum(processed.values()) == accepted
        # A refused delivery was not remembered as seen: GitHub's redelivery is accepted.
        async with aiohttp.ClientSession() as session:
            refused_ids = [i for i, status in enumerate(statuses) if status == 503]
            again = await post_signed(session, world.webhook_url, "push", payload,
                                      f"full-{refused_ids[0]}")
        assert again == 202
        await world.conveyor.pool.wait_idle()
    finally:
        await close_world(world)
