"""Lost events: the periodic resync opens what the webhooks would have, and an idle resync
costs only conditional requests that GitHub answers with `304`."""

from __future__ import annotations

import asyncio
import http
from typing import Any

import gidgethub
import pytest

from bot.domain.gate.model import Verdict
from bot.names import GATE_CHECK
from bot.promotion.gate.checkrun import GateCheckRuns
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.opening import opener
from bot.promotion.resync.reconcile import resync_all
from bot.promotion.triggers import merging
from bot.promotion.triggers.downstream import RERUN_AT_ONCE
from bot.runtime.queue import KeyedLocks
from bot.sandbox.demo import digest_of
from tests.harness import World, close_world, hand_pr, open_unseen_notes, pinned_kustomization
from tests.reliability.support import (
    assert_no_half_made_branches,
    assert_one_pr_per_promotion,
    auto_files,
    build_world,
    promotion_counts,
)


async def test_resync_opens_the_promotion_of_a_release_whose_events_were_lost(
    rworld: World,
) -> None:
    world = rworld
    world.emulator.webhook_url = None  # the bot is unreachable: every delivery fails
    digest = await world.release("web", "1.0.0")
    assert world.emulator.pulls(world.repo, state="all") == []
    assert {d.status_code for d in world.emulator.deliveries} == {0}

    world.emulator.webhook_url = world.webhook_url
    assert await resync_all(world.conveyor.capabilities.resync) == 1
    await world.settle()

    staging = world.pull("Promote web 1.0.0 to staging")
    assert staging["merged"] is True  # auto-merge ran as it would have after the event
    assert staging["head"]["ref"] == f"conveyor/staging/web-{digest[7:19]}"
    assert promotion_counts(world.emulator) == {("web", "staging", digest): 1}


async def test_resync_finds_an_image_published_without_any_event(rworld: World) -> None:
    world = rworld
    digest = digest_of("api:2.0.0")
    await world.emulator.publish_container("acme", "api", digest, ["2.0.0"],
                                           source_repo="acme/api", emit=False)
    world.emulator.webhook_url = None
    await world.emulator.create_tag("acme/api", "v2.0.0")
    await world.emulator.publish_release("acme/api", "v2.0.0")
    await world.settle()
    world.emulator.webhook_url = world.webhook_url
    assert world.open_pulls() == []

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    assert promotion_counts(world.emulator) == {("api", "staging", digest): 1}
    values = world.emulator.file(world.repo, "charts/api/values-staging.yaml")
    assert values is not None and digest in values


async def test_a_second_idle_resync_makes_only_304_requests(rworld: World) -> None:
    world = rworld
    world.emulator.webhook_url = None
    await world.release("web", "1.0.0")
    world.emulator.webhook_url = world.webhook_url
    capabilities = world.conveyor.capabilities
    await resync_all(capabilities.resync)  # opens and merges the lost promotion
    await world.settle()
    await resync_all(capabilities.resync)  # reads what that changed
    await world.settle()
    before = {(pr["number"], pr["state"], pr["head"]["sha"])
              for pr in world.emulator.pulls(world.repo, state="all")}

    world.emulator.reset_counters()
    await resync_all(capabilities.resync)
    await world.settle()

    entries = world.emulator.requests.entries
    assert entries, "the resync made no request at all"
    not_304 = [(e.method, e.url_path, e.status) for e in entries if e.status != 304]
    assert not_304 == [], not_304
    # It still looked at everything it reconciles: installations, repositories, the policy,
    # the source's releases, the package versions, the open PRs and the dashboard.
    paths = {e.path for e in entries}
    for expected in ("/app/installations", "/installation/repositories",
                     "/repos/{owner}/{repo}/contents/{path}", "/repos/{owner}/{repo}/releases",
                     "/repos/{owner}/{repo}/pulls", "/repos/{owner}/{repo}/issues"):
        assert expected in paths, (expected, sorted(paths))
    assert {(pr["number"], pr["state"], pr["head"]["sha"])
            for pr in world.emulator.pulls(world.repo, state="all")} == before
    assert_one_pr_per_promotion(world.emulator)
    assert_no_half_made_branches(world.emulator)


async def test_a_policy_added_to_a_repository_is_found_by_the_next_resync(rworld: World
                                                                          ) -> None:
    """Skipping repositories without a policy while their head is unchanged must not hide a
    policy that arrives with a push whose event was lost."""
    world = rworld
    capabilities = world.conveyor.capabilities
    await resync_all(capabilities.resync)
    await world.settle()
    world.emulator.webhook_url = None
    policy = world.emulator.file(world.repo, ".github/conveyor.yml")
    assert policy is not None
    await world.emulator.push_files("acme/web", {
        ".github/conveyor.yml": policy,
        "apps/web/overlays/staging/kustomization.yaml":
            world.emulator.file(world.repo, "apps/web/overlays/staging/kustomization.yaml"),
    })
    world.emulator.webhook_url = world.webhook_url
    assert await resync_all(capabilities.resync) == 2


async def test_resync_merges_an_auto_merge_promotion_whose_merge_failed(
    rworld: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = rworld

    async def merge_fails(*args: object, **kwargs: object) -> bool:
        raise gidgethub.BadRequest(http.HTTPStatus.BAD_GATEWAY)

    with monkeypatch.context() as patch:
        patch.setattr(merging, "merge_promotion", merge_fails)
        digest = await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    assert staging["state"] == "open" and not staging["merged"]

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    assert world.pull("Promote web 1.0.0 to staging")["merged"] is True
    text = world.emulator.file(world.repo, "apps/web/overlays/staging/kustomization.yaml")
    assert text is not None and digest in text


async def test_resync_closes_an_older_promotion_left_open_beside_a_newer_one(
    rworld: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = rworld

    async def merge_never(*args: object, **kwargs: object) -> bool:
        return False

    async def close_fails(*args: object, **kwargs: object) -> None:
        raise gidgethub.BadRequest(http.HTTPStatus.BAD_GATEWAY)

    with monkeypatch.context() as patch:
        patch.setattr(merging, "merge_promotion", merge_never)
        patch.setattr(opener, "close_superseded", close_fails)
        await world.release("web", "1.0.0")
        newer = await world.release("web", "1.1.0")
    assert len(world.open_pulls()) == 2

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    old = world.pull("Promote web 1.0.0 to staging")
    new = world.pull("Promote web 1.1.0 to staging")
    assert old["state"] == "closed" and not old["merged"]
    assert any(f"Superseded by #{new['number']}" in c["body"]
               for c in world.emulator.comments(world.repo, old["number"]))
    assert new["merged"] is True
    text = world.emulator.file(world.repo, "apps/web/overlays/staging/kustomization.yaml")
    assert text is not None and newer in text
    assert_no_half_made_branches(world.emulator)


async def test_resync_deletes_promotion_branches_without_an_open_pr(rworld: World) -> None:
    world = rworld
    emulator = world.emulator
    merged_digest = await world.release("web", "1.0.0")  # staging PR merged, branch left
    half_made = f"conveyor/production/api-{digest_of('api:7.7.7')[7:19]}"
    await emulator.create_branch(world.repo, half_made)  # the job died before the PR
    await emulator.create_branch(world.repo, "conveyor/notes")  # not Conveyor's naming
    assert f"conveyor/staging/web-{merged_digest[7:19]}" in emulator.branches(world.repo)

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    branches = emulator.branches(world.repo)
    assert half_made not in branches
    assert f"conveyor/staging/web-{merged_digest[7:19]}" not in branches
    assert "conveyor/notes" in branches
    # once the deletions are read back, an idle resync is `304`s only again
    await resync_all(world.conveyor.capabilities.resync)
    emulator.reset_counters()
    await resync_all(world.conveyor.capabilities.resync)
    assert {e.status for e in emulator.requests.entries} == {304}


async def test_an_idle_resync_rewrites_no_gate_of_an_open_pr() -> None:
    """An open production PR whose gate waits for an approval: the resync re-evaluates it each
    time, and a verdict that says what the check run says already is not written again (its
    evaluation time alone is no change), neither by the process that posted it nor by a
    replica or a restarted process that never saw it."""
    world = await build_world(files=auto_files(), source_repos=("acme/worker",))
    try:
        capabilities = world.conveyor.capabilities
        await world.release("web", "1.0.0")
        [production] = [pr for pr in world.open_pulls() if "production" in pr["title"]]
        assert world.gate(production)["conclusion"] == "action_required"
        await resync_all(capabilities.resync)
        await world.settle()
        for forget in (False, True):
            if forget:
                capabilities.gates.runs._posted.clear()  # as a process that never saw it
            world.clock.advance(minutes=10)
            world.emulator.reset_counters()
            await resync_all(capabilities.resync)
            await world.settle()
            written = [(e.method, e.path) for e in world.emulator.requests.entries
                       if e.method != "GET"]
            assert written == [], (forget, written)
        assert world.gate(production)["conclusion"] == "action_required"
    finally:
        await close_world(world)


async def test_two_replicas_gating_one_new_pr_at_once_post_one_gate_run(rworld: World) -> None:
    """Two replicas (each its own memory of the runs it posted, one set of shared locks)
    evaluate the gate of a PR that has none yet, at the same moment: one check run is
    created and the other replica updates or leaves it, never a second run on the commit."""
    world = rworld
    world.emulator.webhook_url = None  # the PR's own events do not gate it first
    pinned = pinned_kustomization("1.0.0", digest_of("web:1.0.0"))
    pr = await hand_pr(world, "apps/web/overlays/prod/kustomization.yaml", pinned)
    ctx = world.conveyor.ctx
    gh = await ctx.clients.installation(world.demo.installation_id)
    [repo] = await world.conveyor.capabilities.policies.load(gh, world.demo.installation_id)
    replicas = (world.conveyor.capabilities.gates, GateService(ctx))
    await asyncio.gather(*(gates.evaluate(gh, repo, int(pr["number"])) for gates in replicas))
    runs = world.emulator.check_runs(world.repo, pr["head"]["sha"], GATE_CHECK)
    assert len(runs) == 1, runs


class ReplicaLocks(KeyedLocks):
    """Locks as Redis gives them: other processes take them too."""

    shared = True


async def test_a_replica_posts_its_verdict_again_after_another_replica_changed_the_run(
        rworld: World) -> None:
    """Replicas each remember what they posted; another replica's newer verdict on the same
    run makes that memory stale, so a replica that reaches its own earlier verdict again
    (an approval dismissed, a hold put back) must write it, not skip it as unchanged."""
    world = rworld
    world.emulator.webhook_url = None
    pinned = pinned_kustomization("1.0.0", digest_of("web:1.0.0"))
    pr = await hand_pr(world, "apps/web/overlays/prod/kustomization.yaml", pinned)
    ctx = world.conveyor.ctx
    ctx.locks = ReplicaLocks()
    gh = await ctx.clients.installation(world.demo.installation_id)
    first, second = GateCheckRuns(ctx), GateCheckRuns(ctx)
    held = Verdict("completed", "failure", "Held", (), None)
    released = Verdict("completed", "success", "All conditions met", (), None)
    sha = str(pr["head"]["sha"])
    await first.post(gh, world.repo, sha, held)
    await second.post(gh, world.repo, sha, released)
    await first.post(gh, world.repo, sha, held)
    [run] = world.emulator.check_runs(world.repo, sha, GATE_CHECK)
    assert (run["conclusion"], run["output"]["title"]) == ("failure", "Held")


async def older_production_pr_approved_unseen(world: World) -> dict[str, Any]:
    """A production promotion waiting for approval, then `RERUN_AT_ONCE` newer open PRs, then
    an approval of the promotion whose event never reaches Conveyor."""
    await world.release("web", "1.0.0")
    [production] = [pr for pr in world.open_pulls() if "production" in pr["title"]]
    assert world.gate(production)["conclusion"] == "action_required"
    await open_unseen_notes(world, RERUN_AT_ONCE)
    world.emulator.webhook_url = None
    await world.emulator.review(world.repo, production["number"], "bob", "APPROVE")
    await world.settle()
    world.emulator.webhook_url = world.webhook_url
    assert world.gate(production)["conclusion"] == "action_required"
    return production


async def test_the_resync_reruns_the_gate_of_every_open_pr_not_only_the_newest() -> None:
    world = await build_world(files=auto_files(), source_repos=("acme/worker",))
    try:
        production = await older_production_pr_approved_unseen(world)
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        assert world.gate(production)["conclusion"] == "success"
    finally:
        await close_world(world)


async def test_a_push_reruns_the_newest_gates_and_a_policy_push_every_gate() -> None:
    world = await build_world(files=auto_files(), source_repos=("acme/worker",))
    try:
        production = await older_production_pr_approved_unseen(world)
        await world.emulator.push_files(world.repo, {"notes/main.md": "main moved\n"},
                                        author="alice", message="a note on main")
        await world.settle()
        assert world.gate(production)["conclusion"] == "action_required"
        policy = world.emulator.file(world.repo, ".github/conveyor.yml")
        assert policy is not None
        await world.emulator.push_files(world.repo, {".github/conveyor.yml": policy + "\n"},
                                        author="alice", message="policy: a blank line")
        await world.settle()
        assert world.gate(production)["conclusion"] == "success"
    finally:
        await close_world(world)
