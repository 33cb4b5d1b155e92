"""Another app's check run named like the gate is not Conveyor's: the gate posts its own run
beside it and leaves the other app's run as that app wrote it."""

from __future__ import annotations

from bot.sandbox.demo import DEPLOY_REPO
from tests.harness import World, pinned_kustomization

PROD = "apps/web/overlays/prod/kustomization.yaml"
GATE = "conveyor/promotion-gate"


async def test_the_gate_does_not_update_another_apps_run_of_its_name(world: World) -> None:
    await world.release("web", "1.0.0")
    em = world.emulator
    never_staged = "sha256:" + "9" * 64
    await em.push_files(DEPLOY_REPO, {PROD: pinned_kustomization("1.0.0", never_staged)},
                        branch="hand/prod-change", author="alice", message="Bump by hand")
    head = em.commit(DEPLOY_REPO, "hand/prod-change")["sha"]
    em.add_app("lookalike")
    await em.create_check_run(DEPLOY_REPO, head, GATE, app="lookalike", conclusion="success")
    await em.open_pull(DEPLOY_REPO, "hand/prod-change", title="Bump by hand", author="alice")
    await world.settle()

    runs = {run["app"]["slug"]: run for run in em.check_runs(DEPLOY_REPO, head, GATE)}
    assert set(runs) == {"lookalike", em.world.app_slug}
    assert runs["lookalike"]["conclusion"] == "success"
    assert runs["lookalike"]["output"].get("summary") in (None, "")
    ours = runs[em.world.app_slug]
    assert ours["conclusion"] == "failure" and "merged" in ours["output"]["summary"]
