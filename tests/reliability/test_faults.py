"""A burst of releases while GitHub misbehaves: 20 % 502s, timeouts, secondary rate limits
with and without `Retry-After`, and the transient 404/409/422/405 answers.

The bot retries what can be retried; what still fails is finished by the resync. Whatever the
order of events and failures, the end state is exactly one PR per (service, environment,
digest), no half-made branch, gates with the verdict the policy asks for, and no request sent
inside a window the installation was told to wait.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from bot.github.client import RetryPolicy
from bot.promotion.resync.reconcile import resync_all
from bot.sandbox.demo import digest_of, release
from tests.harness import close_world
from tests.reliability.support import (
    SendJournal,
    assert_no_half_made_branches,
    assert_one_pr_per_promotion,
    auto_files,
    build_world,
    promotion_counts,
    promotion_prs,
)

SEED = 20261130
SERVICES = ("web", "api", "worker")
VERSIONS = ("1.0.0", "1.1.0")
STAGING_FILES = {
    "web": "apps/web/overlays/staging/kustomization.yaml",
    "api": "charts/api/values-staging.yaml",
    "worker": "apps/worker/staging.yaml",
}
# Small timeouts so that a timed-out request costs a fraction of a second. Waits for rate
# limits and pacing pass on the world's virtual time, so they cost nothing.
FAULTY_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05, request_timeout=0.3)


async def test_a_burst_of_releases_under_faults_ends_with_one_pr_per_promotion(
        monkeypatch: pytest.MonkeyPatch) -> None:
    world = await build_world(files=auto_files(), source_repos=("acme/worker",),
                              retry=FAULTY_RETRY, workers=4)
    journal = SendJournal(world, monkeypatch)
    emulator = world.emulator
    try:
        emulator.dice.rng.seed(SEED)
        emulator.faults.update({"error_rate": 0.2, "timeout_rate": 0.03,
                                "timeout_seconds": 0.6, "secondary_rate_limit_rate": 0.03,
                                "retry_after": 1, "bare_secondary_rate": 0.01,
                                "fresh_branch_404_rate": 0.2, "stale_sha_409_rate": 0.1,
                                "ref_update_failed_rate": 0.1, "no_commits_between_rate": 0.1,
                                "merge_base_modified_rate": 0.2})
        started = time.monotonic()
        await asyncio.gather(*(release(world.emulator, service, version)
                               for version in VERSIONS for service in SERVICES))
        await world.settle(rounds=2000)
        burst_seconds = time.monotonic() - started
        statuses = Counter(e.status for e in emulator.requests.entries)
        assert statuses[502] > 10 and statuses[403] > 0, statuses  # the faults were exercised
        timed_out = sum(sample.value
                        for family in world.conveyor.ctx.metrics.github_requests.collect()
                        for sample in family.samples
                        if sample.name.endswith("_total") and sample.labels["status"] == "error")
        assert timed_out > 0, "no request timed out"
        assert emulator.secondary.opened and emulator.transients.answered
        # Even before any repair: never two PRs for one promotion, never a stray branch.
        assert_one_pr_per_promotion(emulator)

        emulator.faults.reset()
        capabilities = world.conveyor.capabilities
        for _ in range(2):
            await resync_all(capabilities.resync)
            await world.settle(rounds=2000)

        assert_one_pr_per_promotion(emulator)
        assert_no_half_made_branches(emulator)
        counts = promotion_counts(emulator)
        for service in SERVICES:
            newest = digest_of(f"{service}:1.1.0")
            text = emulator.file(world.repo, STAGING_FILES[service])
            assert text is not None and newest in text, (service, text, [
                (p["pr"]["number"], p["pr"]["title"], p["pr"]["state"], p["pr"]["merged"],
                 p["pr"]["merged_at"], p["pr"]["closed_at"],
                 [c["body"][:40] for c in emulator.comments(world.repo, p["pr"]["number"])])
                for p in promotion_prs(emulator)])
            assert counts[(service, "staging", newest)] == 1
            assert counts[(service, "production", newest)] == 1, (service, counts)
        for found in promotion_prs(emulator):
            pr, marker = found["pr"], found["marker"]
            if marker.environment == "staging":
                # merged, or closed as superseded by the newer version
                assert pr["merged"] or pr["state"] == "closed", pr["title"]
                continue
            if marker.digest != digest_of(f"{marker.service}:1.1.0"):
                assert pr["state"] == "closed", pr["title"]  # superseded
                continue
            assert pr["state"] == "open"
            gate = world.gate(pr)
            # evidence merged, no soak: only the approval is missing
            assert (gate["status"], gate["conclusion"]) == ("completed", "action_required"), (
                pr["title"], gate["output"]["title"])
            await emulator.review(world.repo, pr["number"], "bob", "APPROVE")
        await world.settle()
        for found in promotion_prs(emulator):
            pr = found["pr"]
            if pr["state"] == "open":
                gate = world.gate(pr)
                assert gate["conclusion"] == "success", (pr["title"], gate["output"]["title"])
        assert journal.sent_inside_windows() == []
        assert burst_seconds < 60
    finally:
        await close_world(world)
