"""GitHub's transient answers are retried, not lost: a 404 for a write naming a branch created
just before, a 409 on a stale file sha, a 422 "Reference update failed" or "No commits
between", a 405 "Base branch was modified" on merge. Requests are retried where the same
request will get through; jobs are retried (only their failed handlers) with backoff where the
work must be redone, before anything is left to the resync."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from bot.sandbox.demo import digest_of, release
from tests.harness import close_world
from tests.reliability.support import (
    assert_no_half_made_branches,
    assert_one_pr_per_promotion,
    auto_files,
    build_world,
    metric_samples,
    promotion_counts,
)
from tests.reliability.test_faults import SERVICES
from tests.reliability.test_merges import run_timers
from tests.reliability.test_rate_limits import _metrics_text

TRANSIENT = {"fresh_branch_404_rate": 0.3, "stale_sha_409_rate": 0.2,
             "ref_update_failed_rate": 0.15, "no_commits_between_rate": 0.2,
             "merge_base_modified_rate": 0.7}


async def test_transient_answers_lose_no_promotion(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    world = await build_world(files=auto_files(), source_repos=("acme/worker",), workers=4)
    emulator = world.emulator
    try:
        emulator.dice.rng.seed(1)
        emulator.faults.update(TRANSIENT)
        for service in SERVICES:  # one at a time: the dice fall in the same order every run
            await release(world.emulator, service, "1.0.0")
            await world.settle(rounds=2000)
        await run_timers(world, 3)  # merges GitHub refused for a moment are tried again

        kinds = Counter(status for _what, status, _message in emulator.transients.answered)
        assert set(kinds) == {404, 405, 409, 422}, emulator.transients.answered
        # no resync ran: every promotion was opened, staging merged, production waiting
        counts = promotion_counts(emulator)
        for service in SERVICES:
            digest = digest_of(f"{service}:1.0.0")
            assert counts[(service, "staging", digest)] == 1, counts
            assert counts[(service, "production", digest)] == 1, counts
        assert_one_pr_per_promotion(emulator)
        assert_no_half_made_branches(emulator)
        merged = [pr for pr in emulator.pulls(world.repo, state="all") if pr.get("merged")]
        assert len(merged) == len(SERVICES)

        text = _metrics_text(world.conveyor.ctx.metrics)
        retried = sum(metric_samples(text, "conveyor_job_retries_total").values())
        assert retried > 0  # the 409s: the job re-reads the file
        assert sum(metric_samples(text, "conveyor_jobs_given_up_total").values()) == 0
        retry_lines = [r for r in caplog.records
                       if r.getMessage() == "job failed for a transient reason, retrying"]
        assert retry_lines and all(getattr(r, "delivery_id", "") for r in retry_lines)
    finally:
        await close_world(world)


async def test_a_job_that_keeps_failing_is_given_up_to_the_resync(
        caplog: pytest.LogCaptureFixture) -> None:
    """Every `PUT /contents` answered 409: the job is retried a bounded number of times, the
    give-up is counted and logged with the delivery id, and the resync finishes the work."""
    from bot.promotion.resync.reconcile import resync_all

    world = await build_world(files=auto_files(), source_repos=("acme/worker",))
    emulator = world.emulator
    try:
        emulator.faults.update({"stale_sha_409_rate": 1.0})
        await release(world.emulator, "web", "1.0.0")
        await world.settle(rounds=2000)
        text = _metrics_text(world.conveyor.ctx.metrics)
        given_up = metric_samples(text, "conveyor_jobs_given_up_total")
        assert sum(given_up.values()) >= 1, given_up
        retries = metric_samples(text, "conveyor_job_retries_total")
        assert sum(retries.values()) == 3 * sum(given_up.values())  # 4 attempts each
        lines = [r for r in caplog.records if r.getMessage().startswith("job given up")]
        assert lines and all(getattr(r, "delivery_id", "") for r in lines)
        assert promotion_counts(emulator) == Counter()

        emulator.faults.reset()
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle(rounds=2000)
        counts = promotion_counts(emulator)
        assert counts[("web", "staging", digest_of("web:1.0.0"))] == 1
        assert_no_half_made_branches(emulator)
    finally:
        await close_world(world)
