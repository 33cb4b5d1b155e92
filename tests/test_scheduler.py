"""The in-memory timers (bot/runtime/scheduler.py): a later timer with the same key replaces the
earlier one, a due timer becomes one internal job, and a full queue drops the job with a
warning (the resync sets the timer again)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest

from bot.runtime.queue import MemoryQueue
from bot.runtime.scheduler import Scheduler
from bot.runtime.timer_jobs import GateRecheck, MergeRetry

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


async def test_a_timer_set_again_replaces_the_first() -> None:
    queue = MemoryQueue(maxsize=10)
    scheduler = Scheduler(queue, lambda: NOW)
    scheduler.at("soak:acme/deploy#7", NOW + timedelta(hours=1),
                 GateRecheck("acme/deploy", 7, 1))
    scheduler.at("soak:acme/deploy#7", NOW - timedelta(seconds=1),
                 GateRecheck("acme/deploy", 7, 2))
    assert scheduler.pending() == {"soak:acme/deploy#7": NOW - timedelta(seconds=1)}
    assert scheduler.fire_due() == 1
    job = await asyncio.wait_for(queue.take(), 1)
    assert job.event == "conveyor.recheck"
    assert GateRecheck.of(job.payload()) == GateRecheck("acme/deploy", 7, 2)
    assert job.delivery_id.startswith("internal-")
    assert scheduler.pending() == {} and queue.depth() == 0


async def test_a_full_queue_drops_the_job_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    queue = MemoryQueue(maxsize=1)
    scheduler = Scheduler(queue, lambda: NOW)
    caplog.set_level(logging.WARNING, logger="bot.runtime.scheduler")
    scheduler.enqueue(GateRecheck("acme/deploy", 1, 1))
    scheduler.enqueue(GateRecheck("acme/deploy", 2, 1))
    for _ in range(20):
        if not scheduler.offering:
            break
        await asyncio.sleep(0)
    assert queue.depth() == 1
    assert [r.getMessage() for r in caplog.records] == [
        "queue full, internal job dropped until the next resync"]
    scheduler.cancel_all()


def test_a_merge_retry_travels_as_the_payload_it_is_read_from() -> None:
    retry = MergeRetry("acme/deploy", 3, "abc123", "squash", environment="staging", attempt=2,
                       gated=False, installation=9)
    payload = retry.payload()
    assert payload["repository"] == {"full_name": "acme/deploy"}
    assert payload["installation"] == {"id": 9}  # what the worker reads of every job
    assert MergeRetry.of(payload) == retry
    # a payload written before `environment` and `attempt` were kept reads as the first try
    older = {k: v for k, v in payload.items() if k not in ("environment", "attempt")}
    assert MergeRetry.of(older) == MergeRetry("acme/deploy", 3, "abc123", "squash",
                                              environment="unknown", attempt=1, gated=False,
                                              installation=9)
