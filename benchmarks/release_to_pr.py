"""3. Release-to-PR time with every GitHub request taking 50 ms longer.

From the moment the release's deliveries are sent until the emulator has created the pull
request, against (unavoidable requests before the PR exists) × 50 ms: GitHub asks integrations
to make their requests one after the other, so that product is the floor. The emulator's
request log is watched, so the end is the instant the PR was created, not a polling tick.
"""

from __future__ import annotations

import asyncio
import time

from conveyor_emulator.faults.requestlog import RequestEntry, RequestLog

from .counting import (
    COLD_FILES,
    HOLDING_POLICY,
    RELEASE_TO_PR,
    REPOSITORIES,
    TOKEN,
    policy_reads,
)
from .report import Section, median, ms
from .requests_per_promotion import hold_release
from .wiring import Stage, start_bot, start_stage

LATENCY = 0.05
PR_CREATED = ("POST", "/repos/{owner}/{repo}/pulls", 201)


class WatchedLog(RequestLog):
    """The emulator's request log, noting when the first PR was created."""

    def __init__(self) -> None:
        super().__init__()
        self.pr_created_at: float | None = None
        self.pr_index: int | None = None

    def add(self, entry: RequestEntry) -> None:
        super().add(entry)
        if self.pr_created_at is None and (entry.method, entry.path, entry.status) == PR_CREATED:
            self.pr_created_at = time.perf_counter()
            self.pr_index = len(self.entries)

    def reset(self) -> None:
        super().reset()
        self.pr_created_at = None
        self.pr_index = None


async def time_release(stage: Stage, log: WatchedLog, version: str) -> tuple[float, int]:
    """Seconds from sending the release's deliveries to the PR, and requests made before it."""
    assert stage.bot is not None
    since, deliveries = await hold_release(stage, "web", version)
    stage.emulator.reset_counters()
    stage.emulator.faults.latency = LATENCY
    started = time.perf_counter()
    for delivery in deliveries:
        await stage.post(delivery)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while log.pr_created_at is None:
        if loop.time() > deadline:
            raise RuntimeError(f"no pull request was opened for web {version}")
        await asyncio.sleep(0.01)
    elapsed = log.pr_created_at - started
    before = log.pr_index or 0
    await stage.bot.conveyor.pool.wait_idle()
    stage.emulator.faults.latency = 0.0
    await stage.replay_held(since)
    return elapsed, before


async def run(quick: bool) -> Section:
    section = Section("3. Release-to-PR time, emulator +50 ms per request")
    stage = await start_stage()
    log = WatchedLog()
    stage.emulator.requests = log
    try:
        cold_minimum = len([TOKEN, REPOSITORIES, HOLDING_POLICY, *policy_reads(),
                            *COLD_FILES, *RELEASE_TO_PR])
        warm_minimum = len(RELEASE_TO_PR)

        await stage.publish_image("web", "1.1.0")
        await start_bot(stage, forward=False)
        cold, cold_requests = await time_release(stage, log, "1.1.0")
        warm_runs: list[tuple[float, int]] = []
        for minor in range(2, 3 if quick else 5):
            await stage.publish_image("web", f"1.{minor}.0")
            await stage.quiesce()
            warm_runs.append(await time_release(stage, log, f"1.{minor}.0"))
    finally:
        await stage.stop()
    for label, seconds, made, floor_count in (
        ("cold (fresh bot: token, policy discovery)", cold, cold_requests, cold_minimum),
        (f"warm (median of {len(warm_runs)})", median([t for t, _ in warm_runs]),
         int(median([n for _, n in warm_runs])), warm_minimum),
    ):
        floor = floor_count * LATENCY
        section.add(f"release → PR exists, {label}",
                    f"{ms(seconds)} = {seconds / floor:.2f}× floor",
                    target=f"≤ 1.2 × {floor_count} × 50 ms = {ms(1.2 * floor)}",
                    ok=seconds <= 1.2 * floor,
                    note=f"{made} requests before the PR, minimum {floor_count}")
    section.data = {
        "latency_per_request_s": LATENCY,
        "cold": {"seconds": cold, "requests_before_pr": cold_requests,
                 "minimum_requests": cold_minimum},
        "warm": [{"seconds": t, "requests_before_pr": n} for t, n in warm_runs],
        "warm_minimum_requests": warm_minimum,
    }
    return section
