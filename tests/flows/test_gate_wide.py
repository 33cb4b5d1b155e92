"""A change that many gated overlays build: the gate renders them in shared kustomize runs and
its check run says exactly what single builds make it say."""

from __future__ import annotations

import os
from typing import Any

import pytest

from bot.names import POLICY_PATH
from bot.render import batching
from bot.render.tool import find_kustomize
from tests.harness import World, close_world, hand_pr, make_world
from tests.manifest_texts import ENV_FROM, deployment

# CI never skips: a machine without kustomize fails these instead.
pytestmark = pytest.mark.skipif(find_kustomize(None) is None and not os.environ.get("CI"),
                                reason="needs kustomize or kubectl")

SERVICES = ("cart", "search", "profile", "ledger")
POLICY = ("version: 1\nallowed_images: [\"ghcr.io/acme/\"]\nservices:\n" + "".join(
    f"  {name}:\n    image: ghcr.io/acme/{name}\n    source: acme/{name}\n"
    for name in SERVICES) + """\
environments:
  - name: staging
    path: apps/{service}/staging/kustomization.yaml
    from: release
  - name: production
    path: apps/{service}/prod/kustomization.yaml
    after: staging
""")
COMPONENT = "components/mesh/kustomization.yaml"
MESH = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
labels:
  - pairs: {mesh: "on"}
"""
# The component now adds a sidecar to every Deployment of every overlay that builds it.
SIDECAR = MESH + """\
patches:
  - target: {kind: Deployment}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/-
        value: {name: proxy, image: docker.io/evil/proxy:1.0}
"""


def overlay(name: str) -> str:
    text = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            f"namespace: {name}\nresources:\n  - deployment.yaml\n"
            "components:\n  - ../../../components/mesh\n"
            f"configMapGenerator:\n  - name: settings\n    literals: [SERVICE={name}]\n"
            f"images:\n  - name: ghcr.io/acme/{name}\n    newTag: \"1.0.0\"\n")
    if name == "ledger":  # a replacement: this overlay is built alone
        text += ("replacements:\n  - source: {kind: ConfigMap, name: settings}\n"
                 "    targets:\n      - select: {kind: Deployment}\n"
                 "        fieldPaths: [metadata.annotations.settings]\n"
                 "        options: {create: true}\n")
    return text


def repository() -> dict[str, str]:
    files = {POLICY_PATH: POLICY, COMPONENT: MESH, "README.md": "# deploy\n"}
    for name in SERVICES:
        files[f"apps/{name}/prod/kustomization.yaml"] = overlay(name)
        files[f"apps/{name}/prod/deployment.yaml"] = deployment(name, extra=ENV_FROM)
    return files


async def gate_of_the_sidecar() -> tuple[dict[str, Any], World]:
    world = await make_world(files=repository())
    try:
        pr = await hand_pr(world, COMPONENT, SIDECAR, title="Add the mesh sidecar")
        return world.gate(pr), world
    finally:
        await close_world(world)


async def test_the_gate_of_a_wide_change_is_what_single_builds_make_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    shared, world = await gate_of_the_sidecar()
    builder = world.conveyor.ctx.builder
    assert builder is not None
    # three overlays at two commits in shared runs; ledger alone at both
    assert (builder.batched, builder.runs - builder.shared_runs) == (6, 2)
    assert shared["conclusion"] == "failure"
    for name in SERVICES:
        assert "docker.io/evil/proxy" in shared["output"]["summary"]
        assert f"apps/{name}/prod" in shared["output"]["text"]

    monkeypatch.setattr(batching, "alone_reason", lambda files, seen=None: "alone")
    alone, world = await gate_of_the_sidecar()
    builder = world.conveyor.ctx.builder
    assert builder is not None and builder.shared_runs == 0 and builder.runs == 8
    assert verdict(alone) == verdict(shared)


def verdict(run: dict[str, Any]) -> tuple[Any, ...]:
    return (run["conclusion"], run["output"]["title"], run["output"]["summary"],
            run["output"]["text"])
