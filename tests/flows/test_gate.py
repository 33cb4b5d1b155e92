"""The production gate over HTTP: evidence, soak, approvals, restart."""

from __future__ import annotations

from tests.harness import World, hand_pr, pinned_kustomization

PROD = "apps/web/overlays/prod/kustomization.yaml"


async def staged(world: World, version: str = "1.0.0") -> str:
    digest = await world.release("web", version)
    assert world.pull(f"Promote web {version} to staging")["merged"]
    return digest


async def deploy_staging(world: World) -> None:
    head = world.emulator.commit(world.repo, "main")["sha"]
    await world.emulator.set_status(world.repo, head, "argocd/web-staging", "success")
    await world.settle()


async def recheck_timers(world: World) -> None:
    world.conveyor.ctx.scheduler.fire_due()
    await world.settle()


async def test_never_staged_digest_fails(world: World) -> None:
    await staged(world)
    never = "sha256:" + "9" * 64
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", never))
    run = world.gate(pr)
    assert run["status"] == "completed"
    assert run["conclusion"] == "failure"
    assert "merged" in run["output"]["summary"]


async def test_pr_without_gated_change_passes(world: World) -> None:
    pr = await hand_pr(world, "README.md", "# docs only\n", title="Docs")
    run = world.gate(pr)
    assert run["conclusion"] == "success"
    assert run["output"]["title"] == "No gated environment changed"


async def test_merged_but_not_deployed_fails_then_soak_and_approval_pass(world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    run = world.gate(pr)
    assert run["conclusion"] == "failure", run["output"]
    assert "deployed" in run["output"]["summary"]

    await deploy_staging(world)
    run = world.gate(pr)
    assert run["conclusion"] == "action_required", run["output"]  # approvals missing, soaking

    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    await world.settle()
    run = world.gate(pr)
    assert run["status"] == "in_progress", run
    assert "Soaking until" in run["output"]["title"]

    world.clock.advance(minutes=31)
    await recheck_timers(world)
    run = world.gate(pr)
    assert run["conclusion"] == "success", run["output"]


async def test_approvals_that_do_not_count(world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest), author="bob")
    await deploy_staging(world)
    world.clock.advance(hours=1)
    # bob is an approver but the author; carol is no approver; a bot never counts
    await world.emulator.review(world.repo, pr["number"], "bob", "COMMENT",
                                    body="looks fine")
    await world.emulator.review(world.repo, pr["number"], "carol", "APPROVE")
    await world.emulator.review(world.repo, pr["number"], "argocd[bot]", "APPROVE")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "action_required"

    await world.emulator.review(world.repo, pr["number"], "dave", "APPROVE")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "success"

    # a new commit resets approvals: dave's review is on the old head
    await world.emulator.push_files(world.repo, {"apps/web/notes.txt": "x\n"},
                                    branch="hand/prod-change", author="bob")
    await world.settle()
    pr = world.pull("Bump production by hand", state="open")
    assert world.gate(pr)["conclusion"] == "action_required"


async def test_changes_requested_by_an_approver_blocks(world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await deploy_staging(world)
    world.clock.advance(hours=1)
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    await world.emulator.review(world.repo, pr["number"], "dave", "REQUEST_CHANGES",
                                    body="not on a Friday")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "failure"


async def test_a_dismissed_approval_does_not_bring_back_the_same_reviewers_earlier_one(
        world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await deploy_staging(world)
    world.clock.advance(hours=1)
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    again = await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE",
                                        body="still fine")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "success"

    # bob's latest review is the dismissed one: his earlier approval of the head is not his
    # position any more
    await world.emulator.dismiss_review(world.repo, pr["number"], int(again["id"]), user="alice")
    await world.settle()
    run = world.gate(pr)
    assert run["conclusion"] == "action_required", run["output"]
    assert "needs 1 more approval" in run["output"]["summary"]


async def test_check_run_is_updated_in_place(world: World) -> None:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await deploy_staging(world)
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    await world.settle()
    runs = world.emulator.check_runs(world.repo, pr["head"]["sha"], "conveyor/promotion-gate")
    assert len(runs) == 1
