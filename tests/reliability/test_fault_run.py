"""The randomized fault run (`fault_run.py`), bounded seeds: in memory with GitHub's content
limits (most of that run is the bot pacing its writes within 80 a minute), and three replicas
on a real Redis against a server without them, with a release train, a rollback, a failure
report that rolls back by itself and a Redis restart. `python -m tests.reliability.fault_run`
runs longer ones (docs/reliability.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.redis.support import REDIS_MISSING, redis_binary
from tests.reliability.fault_run import RunConfig, fault_run


@pytest.mark.parametrize("seed", [11])
async def test_a_fault_run_in_memory_keeps_every_invariant(tmp_path: Path, seed: int) -> None:
    report = await fault_run(RunConfig(seed=seed, releases=10, kills=2), tmp_path)
    assert not report.problems, "\n".join(report.lines())
    assert report.killed == 2 and sum(map(len, report.released.values())) == 10


@pytest.mark.skipif(redis_binary() is None and not os.environ.get("CI"), reason=REDIS_MISSING)
async def test_a_fault_run_with_replicas_on_redis_keeps_every_invariant(tmp_path: Path) -> None:
    report = await fault_run(RunConfig(
        seed=21, releases=8, kills=2, mode="redis", content_limits=False, trains=1,
        rollbacks=1, failure_reports=1, redis_restarts=1), tmp_path)
    assert not report.problems, "\n".join(report.lines())
    assert (report.killed, report.redis_restarts) == (2, 1)
    assert report.record.done == {"train": 1, "rollback": 1, "failure report": 1}
    assert sum(report.faults.values()) > 0
