"""A manifest too large to check on the event loop is checked in a worker thread or process,
over HTTP against the emulator, with the same findings on the same lines as a small one."""

from __future__ import annotations

import pytest

from bot.runtime.offload import INLINE_BELOW, PROCESS_FROM
from tests.flows.test_config_check import BROKEN_DEPLOYMENT, check_of, lines
from tests.harness import World, hand_pr

PATH = "apps/web/base/deployment.yaml"


@pytest.mark.parametrize("size", [INLINE_BELOW, PROCESS_FROM], ids=["thread", "process"])
async def test_a_large_manifest_gets_the_same_findings(world: World, size: int) -> None:
    padding = "".join(f"# note {n:05d}: padding\n" for n in range(size // 20 + 1))
    text = BROKEN_DEPLOYMENT + padding
    assert len(text) >= size
    pr = await hand_pr(world, PATH, text, title="Break the web deployment")
    run = await check_of(world, pr)
    assert run["conclusion"] == "failure"
    found = lines(run, PATH)
    assert set(found) == {6, 19}, found
    assert "spec.replicas: expected integer, got string '3'" in found[6]
    assert "1 Kubernetes resource(s) against Kubernetes 1." in run["output"]["summary"]
