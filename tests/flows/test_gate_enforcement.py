"""Whether GitHub enforces the gate: read from the default branch's protection and rulesets,
and said on every gated PR, in `/status`, on the dashboard and as a gauge, wherever the gate is
not required from Conveyor's app."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from bot.names import GATE_CHECK
from bot.promotion.dashboard.issue import refresh_dashboard
from bot.promotion.resync.reconcile import resync_all
from tests.harness import World, close_world, hand_pr, make_world, pinned_kustomization

PROD = "apps/web/overlays/prod/kustomization.yaml"
DIGEST = "sha256:" + "4" * 64

Protect = Callable[[World], None]


def nothing(world: World) -> None:
    pass


def any_source(world: World) -> None:
    world.emulator.set_required_checks(world.repo, [GATE_CHECK])


def another_app(world: World) -> None:
    other = world.emulator.add_app("ci-bot")
    world.emulator.set_required_checks(world.repo, [GATE_CHECK], app_id=other)


def this_app(world: World) -> None:
    world.emulator.set_required_checks(world.repo, [GATE_CHECK],
                                       app_id=world.emulator.world.app_id)


def ruleset_any_source(world: World) -> None:
    world.emulator.add_ruleset(world.repo, [(GATE_CHECK, None), ("ci/lint", None)])


def ruleset_another_app(world: World) -> None:
    other = world.emulator.add_app("ci-bot")
    world.emulator.add_ruleset(world.repo, [(GATE_CHECK, other)])


def ruleset_this_app(world: World) -> None:
    world.emulator.add_ruleset(world.repo, [(GATE_CHECK, world.emulator.world.app_id)])


def mixed(world: World) -> None:
    """Branch protection from any source, a ruleset from Conveyor: both must hold."""
    any_source(world)
    ruleset_this_app(world)


CASES: list[tuple[Protect, str | None]] = [
    (nothing, "`conveyor/promotion-gate` is not a required check on `main`"),
    (any_source, "is required on `main` from any source (branch protection)"),
    (another_app, "from another app (app "),
    (this_app, None),
    (ruleset_any_source, "is required on `main` from any source (ruleset "),
    (ruleset_another_app, "from another app (app "),
    (ruleset_this_app, None),
    (mixed, None),
]


async def gauge(world: World) -> str:
    url = world.webhook_url.replace("/api/github/webhooks", "/metrics")
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    return next(line for line in text.splitlines()
                if line.startswith("conveyor_gate_enforced{"))


async def status_reply(world: World) -> str:
    issue = await world.emulator.open_issue(world.repo, "Where are we?", author="alice")
    posted = await world.emulator.comment(world.repo, issue["number"], "alice", "/status")
    await world.settle()
    marker = f"<!-- conveyor:reply {posted['id']} -->"
    [reply] = [c["body"] for c in world.emulator.comments(world.repo, issue["number"])
               if marker in c["body"]]
    return str(reply)


def unescaped(text: str) -> str:
    return text.replace("\\", "")


@pytest.mark.parametrize(("protect", "finding"), CASES,
                         ids=[protect.__name__ for protect, _ in CASES])
async def test_where_the_gate_is_not_required_from_conveyor_every_place_says_so(
        protect: Protect, finding: str | None) -> None:
    world = await make_world()
    try:
        protect(world)
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", DIGEST))
        summary = unescaped(world.gate(pr)["output"]["summary"])
        reply = unescaped(await status_reply(world))
        capabilities = world.conveyor.capabilities
        gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
        [repo] = [r for r in await capabilities.policies.load(gh, world.demo.installation_id)
                  if r.full_name == world.repo]
        await refresh_dashboard(capabilities.dashboards, gh, repo)
        [dashboard] = world.emulator.issues(world.repo, labels=["conveyor-dashboard"])
        body = unescaped(dashboard["body"])
        if finding is None:
            assert "⚠️" not in summary and "⚠️" not in reply and "⚠️" not in body
            assert (await gauge(world)).endswith(" 1.0")
        else:
            assert summary.startswith("> ⚠️ `conveyor/promotion-gate` ") and finding in summary
            assert finding in reply
            assert body.startswith("> ⚠️ `conveyor/promotion-gate` ") and finding in body
            assert (await gauge(world)).endswith(" 0.0")
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_a_server_without_rulesets_reads_branch_protection_alone() -> None:
    world = await make_world()
    try:
        world.emulator.world.rulesets_supported = False
        this_app(world)
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", DIGEST))
        assert "⚠️" not in world.gate(pr)["output"]["summary"]
        assert (await gauge(world)).endswith(" 1.0")
    finally:
        await close_world(world)


async def test_a_status_named_like_the_gate_on_a_head_is_named_with_its_author() -> None:
    world = await make_world()
    try:
        any_source(world)
        world.emulator.add_app("actions")
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", DIGEST))
        sha = pr["head"]["sha"]
        await world.emulator.set_status(world.repo, sha, GATE_CHECK, "success", user="alice")
        await world.emulator.create_check_run(world.repo, sha, GATE_CHECK, app="actions")
        await world.emulator.comment(world.repo, pr["number"], "bob", "/recheck")
        await world.settle()
        [gate] = [run for run in world.emulator.check_runs(world.repo, sha, GATE_CHECK)
                  if run["app"]["slug"] == "conveyor"]
        summary = unescaped(gate["output"]["summary"])
        assert ("a commit status named `conveyor/promotion-gate` was posted on this pull "
                "request's head by @alice, not by Conveyor") in summary
        assert "a check run named `conveyor/promotion-gate` was posted on this pull request's " \
               "head by the app actions" in summary
        assert gate["conclusion"] == "failure"  # the gate itself judges as before
    finally:
        await close_world(world)


async def test_the_resync_reads_protection_again() -> None:
    world = await make_world()
    try:
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", DIGEST))
        assert "is not a required check" in unescaped(world.gate(pr)["output"]["summary"])
        this_app(world)
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        run: dict[str, Any] = world.gate(pr)
        assert "⚠️" not in run["output"]["summary"]
        assert (await gauge(world)).endswith(" 1.0")
    finally:
        await close_world(world)


def test_the_cases_cover_the_four_protection_states() -> None:
    names: set[Callable[..., Awaitable[None] | None]] = {protect for protect, _ in CASES}
    assert {nothing, any_source, another_app, this_app} <= names
    assert {ruleset_any_source, ruleset_another_app, ruleset_this_app} <= names


# Where the gate is enforced, the dashboard's head and `/status` advise on the two settings
# beside it; the gate's summary and the gauge do not change.
BEHIND = ("No rule requiring `conveyor/promotion-gate` on `main` has \"Require branches to be "
          "up to date before merging\": a pull request behind `main` can merge on a verdict "
          "given before `main` last moved. Turn it on in ruleset {ruleset}.")
LAST_PUSH = ("No rule on `main` has \"Require approval of the most recent reviewable push\": "
             "an approver can approve a change someone else pushed onto the pull request. "
             "Turn it on in a ruleset's pull request rule.")
UNSEEN_BEHIND = (
    "Conveyor cannot see whether branch protection on `main` has \"Require branches to be up "
    "to date before merging\", and no ruleset requiring `conveyor/promotion-gate` has it: "
    "without it a pull request behind `main` can merge on a verdict given before `main` last "
    "moved. Check branch protection, or turn it on in a ruleset that requires "
    "`conveyor/promotion-gate`.")
UNSEEN_LAST_PUSH = (
    "Conveyor cannot see whether branch protection on `main` has \"Require approval of the "
    "most recent reviewable push\", and no ruleset has it: without it an approver can approve "
    "a change someone else pushed onto the pull request. Check branch protection, or turn it "
    "on in a ruleset's pull request rule.")


async def dashboard_body(world: World) -> str:
    capabilities = world.conveyor.capabilities
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    [repo] = [r for r in await capabilities.policies.load(gh, world.demo.installation_id)
              if r.full_name == world.repo]
    await refresh_dashboard(capabilities.dashboards, gh, repo)
    [dashboard] = world.emulator.issues(world.repo, labels=["conveyor-dashboard"])
    return unescaped(dashboard["body"])


def advice(text: str) -> list[str]:
    return [line.removeprefix("> ℹ️ ") for line in text.splitlines()
            if line.startswith("> ℹ️ ")]


async def advice_shown(world: World) -> tuple[list[str], list[str]]:
    """The advice heading the dashboard issue and a `/status` reply's answer."""
    body = await dashboard_body(world)
    reply = unescaped(await status_reply(world))
    answer = reply.split("**`/status`**\n\n", 1)[1]
    if advice(reply):
        assert answer.startswith("> ℹ️ ") and body.startswith("> ℹ️ ")
    return advice(body), advice(reply)


async def test_a_ruleset_requiring_the_gate_without_either_setting_is_advised_on() -> None:
    world = await make_world()
    try:
        ruleset = world.emulator.add_ruleset(
            world.repo, [(GATE_CHECK, world.emulator.world.app_id)],
            pull_request={"required_approving_review_count": 1})
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", DIGEST))
        shown, _ = await advice_shown(world)
        assert shown == [BEHIND.format(ruleset=ruleset), LAST_PUSH]
        summary = world.gate(pr)["output"]["summary"]
        assert "ℹ️" not in summary and "⚠️" not in summary and "up to date" not in summary
        assert (await gauge(world)).endswith(" 1.0")
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_each_setting_is_advised_on_alone_until_a_ruleset_has_it() -> None:
    world = await make_world()
    try:
        ruleset = world.emulator.add_ruleset(
            world.repo, [(GATE_CHECK, world.emulator.world.app_id)], strict=True)
        assert await advice_shown(world) == ([LAST_PUSH], [LAST_PUSH])
        world.emulator.add_ruleset(world.repo, [], name="reviews",
                                   pull_request={"require_last_push_approval": True})
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        assert await advice_shown(world) == ([], [])
        world.emulator.world.repo_by_name(world.repo).rulesets[0].strict = False
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        behind = BEHIND.format(ruleset=ruleset)
        assert await advice_shown(world) == ([behind], [behind])
        assert (await gauge(world)).endswith(" 1.0")
    finally:
        await close_world(world)


async def test_where_branch_protection_requires_the_gate_what_it_may_hold_is_unseen() -> None:
    world = await make_world()
    try:
        this_app(world)
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", DIGEST))
        shown, _ = await advice_shown(world)
        assert shown == [UNSEEN_BEHIND, UNSEEN_LAST_PUSH]
        assert "ℹ️" not in world.gate(pr)["output"]["summary"]
        # a ruleset requiring the gate up to date settles the first, whatever branch
        # protection holds; the second stays unseen
        world.emulator.add_ruleset(world.repo, [(GATE_CHECK, None)], strict=True)
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        assert await advice_shown(world) == ([UNSEEN_LAST_PUSH], [UNSEEN_LAST_PUSH])
    finally:
        await close_world(world)


async def test_a_server_without_rulesets_is_advised_on_as_unseen() -> None:
    world = await make_world()
    try:
        world.emulator.world.rulesets_supported = False
        this_app(world)
        assert await advice_shown(world) == ([UNSEEN_BEHIND, UNSEEN_LAST_PUSH],
                                             [UNSEEN_BEHIND, UNSEEN_LAST_PUSH])
        assert (await gauge(world)).endswith(" 1.0")
    finally:
        await close_world(world)


@pytest.mark.parametrize("protect", [nothing, any_source, ruleset_another_app],
                         ids=lambda protect: protect.__name__)
async def test_where_the_gate_is_not_enforced_its_finding_alone_is_said(
        protect: Protect) -> None:
    world = await make_world()
    try:
        protect(world)
        body = await dashboard_body(world)
        reply = unescaped(await status_reply(world))
        assert body.startswith("> ⚠️ ") and "**`/status`**\n\n> ⚠️ " in reply
        assert advice(body) == [] and advice(reply) == []
        assert "up to date" not in body and "up to date" not in reply
        # the same rules, once the gate is required from Conveyor's app, are advised on
        ruleset_this_app(world)
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        shown, _ = await advice_shown(world)
        assert len(shown) == 2
        assert (await gauge(world)).endswith(" 1.0")
    finally:
        await close_world(world)
