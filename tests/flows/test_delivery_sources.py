"""The delivery figures read back from GitHub count what Conveyor merged and what the
environment's deployment tool reported through the deployments API, over HTTP against the
emulator; pull requests people merged, closed ones and ones into other branches count nothing."""

from __future__ import annotations

from datetime import timedelta

from bot.cli.report import collect
from tests.flows.gitops import ArgoCD
from tests.flows.test_delivery_report import settings_of
from tests.flows.test_watch import policy, started
from tests.harness import World, close_world, hand_pr

STAGING = "apps/web/overlays/staging/kustomization.yaml"


async def test_deployments_api_reports_and_pulls_that_do_not_count(world: World) -> None:
    await world.emulator.push_files("acme/web", {"VERSION": "1.0.0"}, message="1.0.0")
    world.clock.advance(hours=1)
    await world.release("web", "1.0.0")
    promotion = world.pull("Promote web 1.0.0 to staging")
    assert promotion["merged"]
    # the deployment tool records staging through the deployments API, 10 minutes later
    world.clock.advance(minutes=10)
    await world.emulator.create_deployment(world.repo, promotion["merge_commit_sha"], "staging",
                                           state="success", user="argocd[bot]")
    await world.settle()
    # a person's PR into main, one closed without merging, one into another branch
    mine = await hand_pr(world, STAGING, "# by hand\n", branch="hand/one", title="By hand")
    await world.emulator.merge_pull(world.repo, mine["number"], user="bob")
    closed = await hand_pr(world, "README.md", "# x\n", branch="hand/two", title="Closed")
    await world.emulator.close_pull(world.repo, closed["number"], user="bob")
    await world.emulator.create_branch(world.repo, "release-1")
    await world.emulator.push_files(world.repo, {"notes.md": "x\n"}, branch="hand/three",
                                    author="alice", message="Notes")
    side = await world.emulator.open_pull(world.repo, "hand/three", base="release-1",
                                          title="Into release-1", author="alice")
    await world.emulator.merge_pull(world.repo, side["number"], user="bob")
    await world.settle()

    found, _, _ = await collect(settings_of(world), world.repo, timedelta(days=30),
                                now=world.clock)
    figures = {(f.service, f.environment): f for f in found}
    staging = figures["web", "staging"]
    assert (staging.deployments, staging.changes, staging.failures) == (1, 1, 0)
    assert staging.lead_time_merged == timedelta(hours=1)
    assert staging.lead_time_deployed == timedelta(hours=1, minutes=10)
    assert figures["web", "production"].deployments == 0


async def test_a_failure_not_yet_restored_has_no_time_to_restore() -> None:
    world = await started(policy(on_failure="hold"))
    try:
        await world.release("web", "1.0.0")
        promotion = world.pull("Promote web 1.0.0 to staging")
        world.clock.advance(minutes=10)
        await ArgoCD(world, app_slug="argocd").status("web-staging",
                                                       promotion["merge_commit_sha"], "failure")
        await world.settle()
        found, _, _ = await collect(settings_of(world), world.repo, timedelta(days=30),
                                    now=world.clock)
    finally:
        await close_world(world)
    staging = next(f for f in found if (f.service, f.environment) == ("web", "staging"))
    assert (staging.deployments, staging.failures) == (1, 1)
    assert staging.change_failure_rate == 1.0
    assert staging.time_to_restore is None  # still failing at the end of the window
    assert staging.lead_time_deployed is None  # never reported deployed
