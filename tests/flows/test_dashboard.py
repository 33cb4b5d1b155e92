"""The dashboard issue over HTTP: created once, edited in place, one update per burst."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.promotion.dashboard.issue import (
    DASHBOARD_LABEL,
    DASHBOARD_MARKER,
    refresh_dashboard,
    refresh_delivery,
)
from tests.flows.test_trace import use_policy
from tests.harness import World

ISSUES = "/repos/{owner}/{repo}/issues"
ISSUE = "/repos/{owner}/{repo}/issues/{issue_number}"


def dashboards(world: World) -> list[dict[str, Any]]:
    return world.emulator.issues(world.repo, labels=[DASHBOARD_LABEL])


async def fire_timers(world: World) -> None:
    """The dashboard's refresh and, after a merge, the delivery read it waits for (20 s after
    the merge, the refresh 5 s later), each as it comes due."""
    for _ in range(10):
        due = sorted(when for when in world.conveyor.ctx.scheduler.pending().values()
                     if when <= world.clock.now + timedelta(seconds=30))
        if not due:
            return
        world.clock.now = max(world.clock.now, due[0])
        world.conveyor.ctx.scheduler.fire_due()
        await world.settle()


def row(body: str, service: str, environment: str) -> list[str]:
    section = body.split(f"### {service}\n", 1)[1]
    line = next(line for line in section.splitlines() if line.startswith(f"| {environment} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


async def test_dashboard_is_created_once_and_edited_in_place(world: World) -> None:
    digest = await world.release("web", "1.4.2")
    staging = world.pull("Promote web 1.4.2 to staging")
    assert staging["merged"]
    assert "dashboard:acme/deploy" in world.conveyor.ctx.scheduler.pending()
    await fire_timers(world)

    [issue] = dashboards(world)
    assert issue["title"] == "Conveyor dashboard"
    assert DASHBOARD_MARKER in issue["body"]
    cells = row(issue["body"], "web", "staging")
    assert cells[1] == "`1.4.2`"
    assert digest.removeprefix("sha256:")[:12] in cells[2]
    assert cells[3].startswith("[2026-11-30 10:00 UTC](")
    assert cells[4] == f"#{staging['number']}"
    assert row(issue["body"], "web", "production")[1] == "`0.9.0`"
    assert row(issue["body"], "api", "staging")[1] == "`0.9.0`"
    assert world.emulator.requests.count("POST", ISSUES) == 1

    await world.release("web", "1.4.3")
    await fire_timers(world)
    [edited] = dashboards(world)
    assert edited["number"] == issue["number"]
    assert row(edited["body"], "web", "staging")[1] == "`1.4.3`"
    assert world.emulator.requests.count("POST", ISSUES) == 1
    assert world.emulator.requests.count("PATCH", ISSUE) == 1


async def test_nothing_changed_means_no_edit(world: World) -> None:
    await world.release("web", "1.4.2")
    await fire_timers(world)
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    gh = await ctx.clients.installation(world.demo.installation_id)
    repo = await capabilities.policies.get(gh, world.demo.installation_id, world.repo)
    assert repo is not None
    before = world.emulator.requests.count("PATCH", ISSUE)
    refreshed = await refresh_dashboard(capabilities.dashboards, gh, repo)  # what the resync calls
    assert refreshed is not None and refreshed["number"] == dashboards(world)[0]["number"]
    assert world.emulator.requests.count("PATCH", ISSUE) == before
    assert world.emulator.requests.count("POST", ISSUES) == 1


async def test_a_burst_of_changes_makes_one_update(world: World) -> None:
    await world.release("web", "1.4.2")
    await world.release("api", "2.0.0")
    # two PRs opened and merged, two pushes: one pending refresh of the dashboard, after the
    # one read of the delivery figures the merges changed
    pending = world.conveyor.ctx.scheduler.pending()
    assert list(pending) == ["dashboard:acme/deploy", "delivery:acme/deploy"]
    assert pending["dashboard:acme/deploy"] == pending["delivery:acme/deploy"] + \
        timedelta(seconds=5)
    await fire_timers(world)
    [issue] = dashboards(world)
    assert world.emulator.requests.count("POST", ISSUES) == 1
    assert world.emulator.requests.count("PATCH", ISSUE) == 0
    assert row(issue["body"], "api", "staging")[1] == "`2.0.0`"
    assert row(issue["body"], "web", "staging")[1] == "`1.4.2`"


async def test_open_promotions_are_listed_and_dropped_when_closed(world: World) -> None:
    await use_policy(world)
    await world.release("web", "1.4.2")
    production = world.pull("Promote web 1.4.2 to production", state="open")
    await fire_timers(world)
    [issue] = dashboards(world)
    assert row(issue["body"], "web", "production")[5] == f"#{production['number']} `1.4.2`"
    assert row(issue["body"], "web", "staging")[5] == "—"

    await world.emulator.close_pull(world.repo, production["number"], user="bob")
    await world.settle()
    await fire_timers(world)
    [issue] = dashboards(world)
    assert row(issue["body"], "web", "production")[5] == "—"


async def test_a_replica_that_knows_less_leaves_the_dashboard_as_it_is(world: World) -> None:
    """Replicas know different things: the package page of a digest comes only with its
    package event, the delivery figures from the replica's own last read. One that did not
    see the event or read the figures since another one wrote them keeps what the issue says,
    instead of writing its poorer view (and the other one writing its own back, every
    resync)."""
    await world.release("web", "1.4.2")
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    gh = await ctx.clients.installation(world.demo.installation_id)
    [repo] = await capabilities.policies.load(gh, world.demo.installation_id)
    await refresh_delivery(capabilities.dashboards)
    await refresh_dashboard(capabilities.dashboards, gh, repo)
    [issue] = dashboards(world)
    assert "/pkgs/container/web/" in issue["body"] and "### Delivery, last 30 days" in issue["body"]

    # Another replica: it never saw the package event, nor read the figures.
    ctx.images._package_pages.clear()
    capabilities.delivery._snapshots.clear()
    world.emulator.reset_counters()
    await refresh_dashboard(capabilities.dashboards, gh, repo)
    assert world.emulator.requests.count("PATCH", ISSUE) == 0
    assert dashboards(world)[0]["body"] == issue["body"]
