"""The gate refuses to judge a gated render that reads a symbolic link, over HTTP against the
emulator with the machine's real Helm and kustomize.

GitHub stores a link as a blob of mode 120000 whose text is its target; Argo CD and Flux check
the repository out and follow the link. A render of that text would judge something other
than what is deployed, so the gate fails and names the link.
"""

from __future__ import annotations

import os

import pytest

from bot.render.tool import find_helm, find_kustomize
from bot.sandbox.demo import DEMO_FILES, DEPLOY_REPO
from tests.flows.test_gate_charts import CHART, SUBCHART_FILES, concluded, world_of
from tests.harness import World, close_world

# CI never skips: a machine without Helm or kustomize fails these instead.
pytestmark = pytest.mark.skipif(
    (find_helm(None) is None or find_kustomize(None) is None) and not os.environ.get("CI"),
    reason="needs helm and kustomize")

MINER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: miner}
spec:
  selector: {matchLabels: {app: miner}}
  template:
    metadata: {labels: {app: miner}}
    spec: {containers: [{name: m, image: "docker.io/evil/miner:1.0"}]}
"""
# Resolves to `misc/a: b` in a checkout; as text, a YAML mapping without a `kind`.
STASH = "misc/a: b"
PROD = "apps/web/overlays/prod/kustomization.yaml"


async def open_with_link(world: World, files: dict[str, str], link: str, target: str
                         ) -> dict[str, object]:
    title = "Add notes"
    await world.emulator.push_files(DEPLOY_REPO, files, symlinks={link: target},
                                    branch="hand/link", author="alice", message=title)
    await world.emulator.open_pull(DEPLOY_REPO, "hand/link", title=title, author="alice")
    await world.settle()
    return world.pull(title, state="open")


async def test_a_chart_template_that_is_a_symbolic_link_fails_the_gate() -> None:
    world = await world_of(SUBCHART_FILES)
    try:
        link = f"{CHART}/templates/miner.yaml"
        pr = await open_with_link(world, {STASH: MINER}, link, "../../../" + STASH)
        text = concluded(world, pr, "failure", f"`{CHART}` cannot be judged: `{link}` is a "
                         "symbolic link: Conveyor renders files as GitHub stores them and "
                         "cannot judge a link; replace it with the file")
        assert "no gated environment changed" not in text.lower()
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_symbolic_link_in_a_kustomize_overlay_fails_the_gate() -> None:
    world = await world_of()
    try:
        link = "apps/web/overlays/prod/extra.yaml"
        prod = DEMO_FILES[PROD].replace("  - ../../base\n", "  - ../../base\n  - extra.yaml\n")
        pr = await open_with_link(world, {STASH: MINER, PROD: prod}, link, "../../../../" + STASH)
        text = concluded(world, pr, "failure", f"`{link}` is a symbolic link: Conveyor renders "
                         "files as GitHub stores them and cannot judge a link")
        assert "missing Resource metadata" not in text  # kustomize never ran on the link's text
    finally:
        await close_world(world)
    assert world.emulator.violations == []
