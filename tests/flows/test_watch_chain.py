"""A digest reported failing in one environment fails the gate of every later environment of
the chain, not only the next one: staging → qa → production, a failure report in staging
after qa already took the digest, and the production promotion's gate names the report."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY
from tests.flows.gitops import ArgoCD
from tests.harness import World, close_world, make_world

QA = """  - name: qa
    path: apps/{service}/overlays/qa/kustomization.yaml
    after: staging
    promote: auto
    evidence: [merged]
    auto_merge: true
"""


def chain_policy() -> str:
    text = DEMO_POLICY.replace(
        "    auto_merge: true\n",
        "    auto_merge: true\n"
        "    on_failure: hold\n"
        "    deployed_context: argocd/{service}-{env}\n"
        '    deployed_by: ["argocd[bot]"]\n', 1)
    text = text.replace("      production: charts/api/values-production.yaml\n",
                        "      qa: charts/api/values-qa.yaml\n"
                        "      production: charts/api/values-production.yaml\n")
    text = text.replace("  - name: production\n", QA + "  - name: production\n")
    return text.replace("    after: staging\n    promote: manual\n",
                        "    after: qa\n    promote: manual\n")


def chain_files(policy: str) -> dict[str, str]:
    """The demo with `policy` and a qa environment that starts as staging is."""
    return {**DEMO_FILES, ".github/conveyor.yml": policy,
            "apps/web/overlays/qa/kustomization.yaml":
                DEMO_FILES["apps/web/overlays/staging/kustomization.yaml"],
            "charts/api/values-qa.yaml": DEMO_FILES["charts/api/values-staging.yaml"]}


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await make_world(files=chain_files(chain_policy()))
    ArgoCD(built, app_slug="argocd").install()
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def test_a_failure_in_staging_blocks_production_after_qa(world: World) -> None:
    await world.release("web", "1.1.0")
    staging = world.pull("Promote web 1.1.0 to staging")
    qa = world.pull("Promote web 1.1.0 to qa")
    assert staging["merged"] and qa["merged"]
    await world.emulator.comment(world.repo, qa["number"], "alice", "/promote production")
    await world.settle()
    production = world.pull("Promote web 1.1.0 to production")

    await ArgoCD(world, app_slug="argocd").status(
        "web-staging", staging["merge_commit_sha"], "failure")
    await world.settle()
    await world.emulator.comment(world.repo, production["number"], "alice", "/recheck")
    await world.settle()

    gate = world.gate(world.pull("Promote web 1.1.0 to production"))
    assert gate["conclusion"] == "failure"
    assert "reported failing in staging" in gate["output"]["summary"]



async def test_a_green_gate_downstream_fails_on_the_failure_reports_own_event() -> None:
    """Production's gate has passed; staging then reports the digest failing: production's
    gate fails on that report's event, without a review, a recheck or a resync."""
    policy = chain_policy()
    production = policy[policy.index("  - name: production\n"):policy.index("groups:")]
    relaxed = (production.replace("evidence: [merged, deployed]", "evidence: [merged]")
               .replace("soak: 30m", "soak: 0s").replace("approvals: 1", "approvals: 0"))
    relaxed = "".join(line for line in relaxed.splitlines(keepends=True)
                      if not line.lstrip().startswith(("approvers:", "deployed_context:",
                                                       "deployed_by:")))
    world = await make_world(files=chain_files(policy.replace(production, relaxed)))
    ArgoCD(world, app_slug="argocd").install()
    try:
        await world.release("web", "1.1.0")
        staging = world.pull("Promote web 1.1.0 to staging")
        qa = world.pull("Promote web 1.1.0 to qa")
        await world.emulator.comment(world.repo, qa["number"], "alice", "/promote production")
        await world.settle()
        production_pr = world.pull("Promote web 1.1.0 to production")
        assert world.gate(production_pr)["conclusion"] == "success"

        await ArgoCD(world, app_slug="argocd").status(
            "web-staging", staging["merge_commit_sha"], "failure")
        await world.settle()
        gate = world.gate(production_pr)
        assert gate["conclusion"] == "failure", gate["output"]
        assert "reported failing in staging" in gate["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []
