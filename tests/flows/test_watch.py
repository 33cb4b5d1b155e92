"""Watching what was promoted, over HTTP: a trusted failure report from Argo CD within `watch`
of a staging merge opens one rollback, marks the digest failed (the production promotion's gate
fails with the report linked) and comments on the promotion; redeliveries, later reports, a
lost event and an interrupted run change nothing more."""

from __future__ import annotations

import http
from collections.abc import AsyncIterator
from typing import Any

import gidgethub
import pytest

from bot.promotion.commands import rollback as rollback_commands
from bot.promotion.resync.reconcile import resync_all
from bot.promotion.triggers.downstream import RERUN_AT_ONCE
from bot.sandbox.demo import DEMO_POLICY
from bot.text import unescape_markdown
from tests.flows.gitops import ArgoCD
from tests.harness import World, close_world, make_world, open_unseen_notes

STAGING_FILE = "apps/web/overlays/staging/kustomization.yaml"
MARK = "conveyor/reported-failing (web in staging)"


def policy(on_failure: str = "rollback", watch: str = "1h") -> str:
    return DEMO_POLICY.replace(
        "    auto_merge: true\n",
        "    auto_merge: true\n"
        f"    on_failure: {on_failure}\n    watch: {watch}\n"
        "    deployed_context: argocd/{service}-{env}\n"
        '    deployed_by: ["argocd[bot]"]\n', 1)


async def started(text: str) -> World:
    from bot.sandbox.demo import DEMO_FILES

    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": text})
    ArgoCD(world, app_slug="argocd").install()
    return world


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await started(policy())
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def two_releases(world: World) -> tuple[str, str, dict[str, Any]]:
    """1.0.0 then 1.1.0 merged into staging; 1.1.0's production PR open (by /promote)."""
    old = await world.release("web", "1.0.0")
    new = await world.release("web", "1.1.0")
    staging = world.pull("Promote web 1.1.0 to staging")
    assert staging["merged"]
    await world.emulator.comment(world.repo, staging["number"], "alice", "/promote production")
    await world.settle()
    return old, new, staging


def bot_comments(world: World, number: int) -> list[dict[str, Any]]:
    login = world.conveyor.ctx.bot_login
    return [c for c in world.emulator.comments(world.repo, number)
            if c["user"]["login"] == login and "conveyor:watch-comment" in c["body"]]


def rollbacks(world: World) -> list[dict[str, Any]]:
    return [pr for pr in world.emulator.pulls(world.repo, state="all")
            if pr["title"].startswith("Roll back web in staging")]


def marks(world: World, staging: dict[str, Any]) -> list[dict[str, Any]]:
    return world.emulator.check_runs(world.repo, staging["merge_commit_sha"], MARK)


async def argo_reports(world: World, sha: str, state: str) -> None:
    await ArgoCD(world, app_slug="argocd").status("web-staging", sha, state)


async def test_a_failure_ten_minutes_after_the_merge_rolls_back_once_and_blocks_production(
    world: World,
) -> None:
    old, new, staging = await two_releases(world)
    production = world.pull("Promote web 1.1.0 to production", state="open")
    world.clock.advance(minutes=10)
    await argo_reports(world, staging["merge_commit_sha"], "failure")

    [rollback] = rollbacks(world)
    assert rollback["title"] == "Roll back web in staging to 1.0.0 (from 1.1.0)"
    assert rollback["merged"]  # staging has auto_merge and no gate
    text = world.emulator.file(world.repo, STAGING_FILE)
    assert text is not None and old in text and new not in text

    [mark] = marks(world, staging)
    assert (mark["conclusion"], mark["external_id"]) == ("failure", new)
    assert mark["app"]["id"] == world.emulator.app_id
    gate = world.gate(world.pull("Promote web 1.1.0 to production", state="open"))
    assert gate["conclusion"] == "failure"
    summary = unescape_markdown(str(gate["output"]["summary"]))
    assert f"{new[:19]} was reported failing in staging at 2026-11-30T10:10:00Z" in summary
    assert "argocd.example.com/applications/web-staging" in summary  # the report, linked
    [comment] = bot_comments(world, staging["number"])
    assert f"opened the rollback #{rollback['number']}" in comment["body"]
    assert production["number"] != rollback["number"]

    # A second failure report, a redelivery of the first, and a success afterwards: nothing new.
    await argo_reports(world, staging["merge_commit_sha"], "error")
    world.conveyor.door.seen.clear()
    delivery = next(d for d in reversed(world.emulator.deliveries) if d.event == "status"
                    and d.payload["state"] == "failure")
    assert await world.emulator.redeliver(delivery.id) == 202
    await world.settle()
    await argo_reports(world, staging["merge_commit_sha"], "success")
    assert len(rollbacks(world)) == 1
    assert len(marks(world, staging)) == 1
    assert len(bot_comments(world, staging["number"])) == 1
    gate = world.gate(world.pull("Promote web 1.1.0 to production", state="open"))
    assert gate["conclusion"] == "failure"


async def test_a_failure_report_fails_the_gate_of_an_older_open_promotion(world: World
                                                                          ) -> None:
    """A push re-runs only the newest gates at once; a failure report re-runs every one, so
    a production promotion behind `RERUN_AT_ONCE` newer PRs fails on the report's event."""
    _, _, staging = await two_releases(world)
    await open_unseen_notes(world, RERUN_AT_ONCE)
    world.clock.advance(minutes=10)
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    gate = world.gate(world.pull("Promote web 1.1.0 to production", state="open"))
    assert "reported failing" in gate["output"]["summary"], gate["output"]["summary"]


async def test_a_failure_after_watch_opens_nothing(world: World) -> None:
    _, _, staging = await two_releases(world)
    world.clock.advance(minutes=61)
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    assert rollbacks(world) == []
    assert marks(world, staging) == []
    assert bot_comments(world, staging["number"]) == []


async def test_an_untrusted_failure_report_opens_nothing(world: World) -> None:
    _, _, staging = await two_releases(world)
    world.clock.advance(minutes=5)
    await world.emulator.set_status(world.repo, staging["merge_commit_sha"],
                                    "argocd/web-staging", "failure", user="carol")
    await world.settle()
    assert rollbacks(world) == [] and marks(world, staging) == []


async def test_on_failure_hold_marks_and_comments_only() -> None:
    world = await started(policy("hold", "30m"))
    try:
        _, new, staging = await two_releases(world)
        world.clock.advance(minutes=20)
        await argo_reports(world, staging["merge_commit_sha"], "failure")
        assert rollbacks(world) == []
        text = world.emulator.file(world.repo, STAGING_FILE)
        assert text is not None and new in text
        [comment] = bot_comments(world, staging["number"])
        assert "No rollback is opened (on_failure is hold)" in comment["body"]
        gate = world.gate(world.pull("Promote web 1.1.0 to production", state="open"))
        assert gate["conclusion"] == "failure"
        assert "was reported failing in staging" in gate["output"]["summary"]
    finally:
        await close_world(world)


async def test_a_report_the_bot_missed_is_found_by_the_resync(world: World) -> None:
    _, _, staging = await two_releases(world)
    world.clock.advance(minutes=10)
    world.emulator.webhook_url = None  # the bot is down while Argo CD reports
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    assert rollbacks(world) == []
    world.emulator.webhook_url = world.webhook_url
    world.clock.advance(hours=2)  # back after watch: the report's own time counts
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    assert len(rollbacks(world)) == 1 and rollbacks(world)[0]["merged"]
    assert len(marks(world, staging)) == 1
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    assert len(rollbacks(world)) == 1
    assert len(bot_comments(world, staging["number"])) == 1


async def test_a_run_interrupted_after_the_mark_is_finished_by_the_resync(
    world: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, staging = await two_releases(world)
    world.clock.advance(minutes=10)

    async def github_fails(*args: object, **kwargs: object) -> None:
        raise gidgethub.BadRequest(http.HTTPStatus.BAD_GATEWAY)

    with monkeypatch.context() as patch:
        patch.setattr(rollback_commands, "open_rollback_for", github_fails)
        await argo_reports(world, staging["merge_commit_sha"], "failure")
    assert rollbacks(world) == []
    [mark] = marks(world, staging)  # the mark came first: production is blocked already
    assert "pending" in mark["output"]["text"]
    assert world.gate(world.pull("Promote web 1.1.0 to production", state="open"))[
        "conclusion"] == "failure"

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    [rollback] = rollbacks(world)
    [mark] = marks(world, staging)
    assert f"#{rollback['number']}" in mark["output"]["text"]
    assert len(bot_comments(world, staging["number"])) == 1


async def production_marked_failing(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    """web 1.1.0 merged in staging, reported failing there 10 minutes later; its production
    promotion open: (staging PR, production PR)."""
    _, _, staging = await two_releases(world)
    world.clock.advance(minutes=10)
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    return staging, world.pull("Promote web 1.1.0 to production", state="open")


def replies_on(world: World, number: int) -> list[str]:
    return [c["body"] for c in world.emulator.comments(world.repo, number)
            if c["user"]["login"] == world.conveyor.ctx.bot_login]


async def test_unhold_on_the_blocked_promotion_clears_the_mark(world: World) -> None:
    staging, production = await production_marked_failing(world)
    await world.emulator.comment(world.repo, production["number"], "bob", "/unhold")
    await world.settle()
    [mark] = marks(world, staging)
    assert mark["conclusion"] == "neutral"
    assert "Cleared by @bob with `/unhold`." in mark["output"]["summary"]
    gate = world.gate(world.pull("Promote web 1.1.0 to production", state="open"))
    assert "reported failing" not in gate["output"]["summary"]
    assert any("the failure mark is cleared" in body
               for body in replies_on(world, production["number"]))
    # A redelivered failure report does not mark it again.
    world.conveyor.door.seen.clear()
    delivery = next(d for d in reversed(world.emulator.deliveries) if d.event == "status")
    assert await world.emulator.redeliver(delivery.id) == 202
    await world.settle()
    assert [m["conclusion"] for m in marks(world, staging)] == ["neutral"]
    assert len(rollbacks(world)) == 1


async def test_only_an_approver_of_the_promotion_clears_the_mark(world: World) -> None:
    """alice may write but is not in `@acme/sre`, production's approvers: her `/unhold`
    clears nothing and says who decides; bob's does."""
    staging, production = await production_marked_failing(world)
    await world.emulator.comment(world.repo, production["number"], "alice", "/unhold")
    await world.settle()
    [mark] = marks(world, staging)
    assert mark["conclusion"] == "failure"
    gate = world.gate(world.pull("Promote web 1.1.0 to production", state="open"))
    assert "reported failing" in gate["output"]["summary"]
    replies = replies_on(world, production["number"])
    assert any("@alice cannot clear a failure mark on a promotion to `production`" in body
               and "`@acme/sre`" in body for body in replies), replies
    await world.emulator.comment(world.repo, production["number"], "bob", "/unhold")
    await world.settle()
    assert [m["conclusion"] for m in marks(world, staging)] == ["neutral"]


async def test_the_resync_leaves_a_report_missed_long_ago(world: World) -> None:
    _, _, staging = await two_releases(world)
    world.clock.advance(minutes=10)
    world.emulator.webhook_url = None
    await argo_reports(world, staging["merge_commit_sha"], "failure")
    world.emulator.webhook_url = world.webhook_url
    world.clock.advance(days=2)  # watch ended more than a day ago
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    assert rollbacks(world) == [] and marks(world, staging) == []
