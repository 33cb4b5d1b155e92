"""The writes each of Conveyor's paths makes on GitHub, counted by the emulator over HTTP and
asserted exactly: its floor and the writes above it that `benchmarks/write_paths.py` names
with their reasons, nothing more. GitHub allows an installation 500 content-creating requests
an hour, so a write that sneaks in is throughput lost.

Run both ways in CI: on a server that signs Conveyor's commits (github.com) and on one that
does not (`CONVEYOR_TEST_SIGNING=off`), where each commit of Conveyor's gets its receipt.
"""

from __future__ import annotations

import os

import pytest

from benchmarks.write_paths import DASHBOARD, PATHS, Path, described, start, writes
from bot.render.tool import find_helm
from tests.harness import close_world, commit_signing

# the demo's api is a Helm chart: its promotions are rendered before they merge
needs_helm = pytest.mark.skipif(find_helm(None) is None and not os.environ.get("CI"),
                                reason="needs helm")

# The totals, on a server that signs Conveyor's commits and on one that does not (one receipt
# more per commit), so that a need added to a path's floor is a decision of this file too.
TOTALS = {
    "release → entry-environment PR with auto-merge": (11, 12),
    "`/promote` to a gated environment: opened": (8, 9),  # 7 + the dashboard's edit
    "`/promote` to a gated environment through soak, approval and merge": (15, 16),
    "release train of 2 services to production, through soak, approval and merge": (19, 20),
    "`/rollback` of the entry environment (auto-merged)": (11, 12),
    "failure report → automatic rollback (`on_failure: rollback`)": (14, 15),
    "an idle hour: six resyncs, no event": (0, 0),
}


@needs_helm
@pytest.mark.parametrize("path", PATHS, ids=[p.writes.name for p in PATHS])
async def test_each_path_makes_exactly_its_floor_and_the_writes_named_above_it(
        path: Path) -> None:
    signing = commit_signing()
    world = await start()
    try:
        found = await path.play(world)
        assert world.emulator.violations == [], world.emulator.violations
    finally:
        await close_world(world)
    expected = path.writes.expected(signing=signing)
    assert found == expected, (f"more: {described(found - expected)}; "
                               f"fewer: {described(expected - found)}")
    assert sum(found.values()) == TOTALS[path.writes.name][0 if signing else 1]
    if path.writes.name.endswith(": opened"):
        # about 70 promotions an hour within GitHub's 500: the reply, branch, commit, pull
        # request, labels, gate and config check; the dashboard's edit is shared by every
        # change within its debounce, and a server that does not sign adds the receipt
        assert sum(found.values()) - found[DASHBOARD.write] == (7 if signing else 8)


def test_the_writes_counted_are_those_of_the_installation() -> None:
    from conveyor_emulator.faults.requestlog import RequestEntry

    entries = [RequestEntry("POST", "/app/installations/{installation_id}/access_tokens", 201,
                            None, False),
               RequestEntry("GET", "/repos/{owner}/{repo}/pulls", 200, 7, False),
               RequestEntry("POST", "/repos/{owner}/{repo}/check-runs", 201, 7, False,
                            check_name="conveyor/promotion-gate")]
    assert writes(entries) == {("POST", "/repos/{owner}/{repo}/check-runs",
                                "conveyor/promotion-gate"): 1}
