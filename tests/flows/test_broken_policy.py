"""A deployment repository whose policy was never valid, over HTTP against the emulator: the
gate fails, the config check still runs, nothing is promoted; fixing the file makes it usable."""

from __future__ import annotations

from bot.names import POLICY_PATH
from bot.promotion.dashboard.issue import DASHBOARD_LABEL
from bot.promotion.policies import BrokenPolicy, DeploymentRepo
from bot.sandbox.demo import DEMO_FILES
from tests.flows.test_dashboard import fire_timers
from tests.harness import DEPLOY_REPO, World, close_world, hand_pr, make_world

BROKEN = "version: 1\nservices: []\nenvironments: nope\n"
STAGING = "apps/web/overlays/staging/kustomization.yaml"


async def indexed(world: World) -> DeploymentRepo | BrokenPolicy | None:
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    gh = await ctx.clients.installation(world.demo.installation_id)
    return await capabilities.policies.get(gh, world.demo.installation_id, DEPLOY_REPO)


async def test_a_policy_never_valid_fails_the_gate_and_promotes_nothing() -> None:
    world = await make_world(files={**DEMO_FILES, POLICY_PATH: BROKEN})
    try:
        pr = await hand_pr(world, STAGING, DEMO_FILES[STAGING] + "# by hand\n")
        gate = world.gate(pr)
        assert gate["conclusion"] == "failure"
        assert gate["output"]["title"] == f"The policy {POLICY_PATH} is invalid"
        assert world.emulator.check_runs(DEPLOY_REPO, pr["head"]["sha"],
                                         "conveyor/config-check")
        repo = await indexed(world)
        assert isinstance(repo, BrokenPolicy) and repo.issues

        await world.release("web", "1.0.0")
        assert [p["number"] for p in world.open_pulls()] == [pr["number"]]
        await fire_timers(world)
        assert world.emulator.issues(DEPLOY_REPO, labels=[DASHBOARD_LABEL]) == []
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_fixing_a_policy_never_valid_makes_the_repository_usable() -> None:
    world = await make_world(files={**DEMO_FILES, POLICY_PATH: BROKEN})
    try:
        assert isinstance(await indexed(world), BrokenPolicy)
        await world.emulator.push_files(DEPLOY_REPO, {POLICY_PATH: DEMO_FILES[POLICY_PATH]},
                                        message="Fix the policy", author="alice")
        await world.settle()
        repo = await indexed(world)
        assert isinstance(repo, DeploymentRepo) and repo.issues == []
        # The push was seen while the policy was still broken: the dashboard follows it.
        await fire_timers(world)
        assert len(world.emulator.issues(DEPLOY_REPO, labels=[DASHBOARD_LABEL])) == 1

        await world.release("web", "1.0.0")
        assert world.pull("Promote web 1.0.0 to staging")["merged"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []

