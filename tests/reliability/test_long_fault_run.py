"""The randomized fault run at length: hundreds of releases across the three services and both
environments, with release trains, rollbacks, failure reports that roll back by themselves and
kills, in memory and with three replicas on a real Redis that is restarted. Against a server
without content limits (`--content-limits off`), so that the run is the faults and not the
pacing of GitHub's 80 writes a minute, which `test_fault_run.py` keeps.

Most of such a run is waiting (retry backoffs, secondary-limit windows, restarts), so
`.ci/run` runs this file beside the other tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.redis.support import REDIS_MISSING, redis_binary
from tests.reliability.fault_run import RunConfig, fault_run


async def test_two_hundred_releases_in_memory_keep_every_invariant(tmp_path: Path) -> None:
    report = await fault_run(RunConfig(
        seed=31, releases=200, kills=6, content_limits=False, trains=4, rollbacks=4,
        failure_reports=4, settle_within=600.0), tmp_path)
    assert not report.problems, "\n".join(report.lines())
    assert report.killed == 6 and sum(map(len, report.released.values())) == 200
    assert report.record.done == {"train": 4, "rollback": 4, "failure report": 4}


@pytest.mark.skipif(redis_binary() is None and not os.environ.get("CI"), reason=REDIS_MISSING)
async def test_a_hundred_releases_on_redis_keep_every_invariant(tmp_path: Path) -> None:
    report = await fault_run(RunConfig(
        seed=32, releases=100, kills=4, mode="redis", content_limits=False, trains=2,
        rollbacks=2, failure_reports=2, redis_restarts=2, settle_within=300.0), tmp_path)
    assert not report.problems, "\n".join(report.lines())
    assert (report.killed, report.redis_restarts) == (4, 2)
    assert sum(map(len, report.released.values())) == 100
    assert report.record.done == {"train": 2, "rollback": 2, "failure report": 2}
