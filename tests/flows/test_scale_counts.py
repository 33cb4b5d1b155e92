"""500 services × 4 environments on one installation, over HTTP: the requests a cold start, a
dashboard refresh and an idle resync cost are counted by the emulator, exactly.

The world is the benchmark's (`benchmarks/scale.py`): one deployment repository whose policy
names 500 services and 4 environments, 2,000 Kustomize overlays committed by hand; in the
installation the two demo source repositories, or 200 repositories in all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest

from benchmarks.scale import deployment_files, install_repositories, other_repositories
from bot.promotion.dashboard.issue import refresh_dashboard
from bot.promotion.resync.reconcile import resync_all
from conveyor_emulator.faults.requestlog import RequestEntry
from tests.harness import World, close_world, make_world

SERVICES = 500


@pytest.fixture
async def scale() -> AsyncIterator[World]:
    built = await make_world(files=deployment_files(SERVICES))
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


def counted(entries: list[RequestEntry]) -> Counter[tuple[str, str, int]]:
    """REST requests of the installation by route and status."""
    return Counter((e.method, e.path, e.status) for e in entries
                   if e.installation_id and e.resource == "core")


def graphql_queries(entries: list[RequestEntry]) -> int:
    """GraphQL queries of the installation (1 point each: their own budget, not REST's)."""
    return sum(1 for e in entries if e.installation_id and e.resource == "graphql")


R = "/repos/{owner}/{repo}"


async def test_cold_start_dashboard_and_resync_then_warm_refreshes_and_idle_resyncs(
        scale: World) -> None:
    world = scale
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    world.emulator.requests.reset()
    await resync_all(capabilities.resync)  # the first thing the periodic resync does after a start
    await world.settle()
    cold = counted(world.emulator.requests.entries)
    rate_limited = sum(n for (_, _, status), n in cold.items() if status != 304)
    assert rate_limited <= 100
    # The 2,000 files come in one archive, not one request each; "since" of files committed
    # by hand comes from their history, the first import commit answering for all of them.
    assert cold[("GET", R + "/tarball/{ref}", 302)] == 1
    assert cold[("GET", R + "/git/trees/{tree_sha}", 200)] == 1
    assert sum(n for (_, path, _), n in cold.items() if path == R + "/git/blobs/{file_sha}") == 0
    assert cold[("GET", R + "/commits/{ref}", 200)] == 7  # the import's files, 300 a page
    assert cold[("POST", R + "/issues", 201)] == 1  # the dashboard
    # The rest: the repository list, the policy (one GraphQL query shows that the two source
    # repositories hold none: a head read for each, their `pushed_at` too young to stand for
    # it), the branch head, the open and the recently
    # closed pull requests, the file history walk and its PR, web's releases, the stray
    # branch listing and the dashboard issue list. The dashboard of 500 services × 4
    # environments is more than one body holds: it continues in six comments (and their list
    # is read once). And the default branch's protection and rules: is the gate enforced?
    assert cold[("POST", R + "/issues/{issue_number}/comments", 201)] == 6
    assert cold[("GET", R + "/branches/{branch}", 200)] == 1
    assert cold[("GET", R + "/rules/branches/{branch}", 200)] == 1
    assert rate_limited == 22 + 1 + 6 + 2, "\n".join(map(str, sorted(cold.items())))
    assert cold[("GET", R + "/contents/{path}", 404)] == 0
    assert graphql_queries(world.emulator.requests.entries) == 1

    assert len(world.emulator.issues(world.repo, labels=["conveyor-dashboard"])) == 1

    gh = await ctx.clients.installation(world.demo.installation_id)
    [repo] = [r for r in await capabilities.policies.load(gh, world.demo.installation_id)
              if r.policy]
    world.emulator.requests.reset()
    await refresh_dashboard(capabilities.dashboards, gh, repo)
    warm = counted(world.emulator.requests.entries)
    # The branch head, the open and the closed pull requests: 304s. The dashboard issue list
    # and its comments changed since they were last read (created after).
    assert warm == {("GET", R + "/git/ref/{ref}", 304): 1, ("GET", R + "/pulls", 304): 2,
                    ("GET", R + "/issues", 200): 1,
                    ("GET", R + "/issues/{issue_number}/comments", 200): 1}, warm

    # A person changes one service's file; its push is not delivered, so only the refresh
    # is counted: the new head and tree, the one new blob, that service's history walk (the
    # file before the change is the blob read last time: no request) and its PR, and the edit.
    path = "apps/svc-001/staging/kustomization.yaml"
    text = world.emulator.file(world.repo, path)
    assert text is not None
    world.emulator.webhook_url = None
    await world.emulator.push_files(world.repo, {path: text.replace('"0.9.0"', '"0.9.1"')},
                                    author="bob", message="svc-001 0.9.1 by hand")
    world.emulator.requests.reset()
    await refresh_dashboard(capabilities.dashboards, gh, repo)
    world.emulator.webhook_url = world.webhook_url
    changed = counted(world.emulator.requests.entries)
    assert sum(changed.values()) <= 10, changed
    assert changed[("GET", R + "/git/blobs/{file_sha}", 200)] == 1
    assert changed[("GET", R + "/contents/{path}", 200)] == 0
    assert changed[("GET", R + "/commits", 200)] == 1
    [issue] = world.emulator.issues(world.repo, labels=["conveyor-dashboard"])
    shown = [issue["body"], *(c["body"] for c in world.emulator.comments(world.repo,
                                                                         issue["number"]))]
    assert any("svc-001" in body and "`0.9.1`" in body for body in shown)

    for _ in range(2):  # settle: the first resyncs may still tidy up
        await resync_all(capabilities.resync)
        await world.settle()
    world.emulator.requests.reset()
    await resync_all(capabilities.resync)
    await world.settle()
    idle = counted(world.emulator.requests.entries)
    assert {status for _, _, status in idle} == {304}, idle
    assert graphql_queries(world.emulator.requests.entries) == 0
    assert sum(idle.values()) <= 50
    # 13, the dashboard's continuation comments, the branch's protection and its rules (each
    # a 304 as well)
    assert sum(idle.values()) == 16, sorted(idle.items())


INSTALLED = 200


async def test_two_hundred_installed_repositories_cost_one_policy_read_each_once(
        scale: World) -> None:
    """The deployment repository, the two demo sources, 147 more sources of the policy's
    services and 50 repositories that feed none, all last pushed ten minutes before the bot
    starts; resyncs ten minutes apart (the default interval)."""
    world = scale
    capabilities = world.conveyor.capabilities
    others = other_repositories(INSTALLED, SERVICES)
    assert len(others) == INSTALLED - 3
    await install_repositories(world.emulator, world.demo.installation_id, others)
    world.clock.advance(minutes=10)
    world.emulator.requests.reset()
    await resync_all(capabilities.resync)
    await world.settle()
    cold = counted(world.emulator.requests.entries)
    # Discovery: the list (two pages of 100) and two GraphQL queries of 100 repositories,
    # which show the policy file of the deployment repository only (read over REST) and no
    # `404` at all; no branch head: their `pushed_at` is settled. Releases of the first 30 of
    # the 148 installed sources of services (the rest in the next passes).
    assert cold[("GET", "/installation/repositories", 200)] == 2
    assert cold[("GET", R + "/contents/{path}", 404)] == 0
    assert cold[("GET", R + "/contents/{path}", 200)] == 1
    assert graphql_queries(world.emulator.requests.entries) == 2
    assert cold[("GET", R + "/releases", 200)] == 30
    assert sum(n for (_, path, _), n in cold.items() if path == R + "/git/ref/{ref}") == 1
    rate_limited = sum(n for (_, _, status), n in cold.items() if status != 304)
    # 29 as with 3 repositories (31 above, less the two branch heads a settled `pushed_at`
    # stands for), the list's second page and 29 more release lists
    assert rate_limited == 29 + 1 + 29, sorted(cold.items())
    assert rate_limited < 100

    passes = 0
    while True:  # until every source was read once: 148 / 30 passes
        passes += 1
        world.clock.advance(minutes=10)
        world.emulator.requests.reset()
        await resync_all(capabilities.resync)
        await world.settle()
        if all(e.status == 304 for e in world.emulator.requests.entries if e.installation_id):
            break
    assert passes == 5
    world.clock.advance(minutes=10)
    world.emulator.requests.reset()
    await resync_all(capabilities.resync)
    await world.settle()
    idle = counted(world.emulator.requests.entries)
    assert {status for _, _, status in idle} == {304}, idle
    assert graphql_queries(world.emulator.requests.entries) == 0
    # The list's two pages answer for the 199 repositories without a policy, five sources'
    # releases are read in rotation, the rest is the deployment repository's: 14 as with 3
    # repositories (16 above, less the two branch heads), a page and 4 release lists more.
    assert idle[("GET", "/installation/repositories", 304)] == 2
    assert idle[("GET", R + "/releases", 304)] == 5
    assert sum(idle.values()) == 14 + 1 + 4, sorted(idle.items())

    # A release of one of the 148 sources whose events were lost: its tag moved the
    # repository's `pushed_at`, so the next pass reads its releases, not only the rotation.
    world.emulator.webhook_url = None
    world.clock.advance(minutes=1)
    await world.emulator.publish_release("acme/svc-120", "v1.0.0", author="alice")
    world.emulator.webhook_url = world.webhook_url
    world.clock.advance(minutes=10)
    world.emulator.requests.reset()
    await resync_all(capabilities.resync)
    await world.settle()
    releases = [e for e in world.emulator.requests.entries if e.path == R + "/releases"]
    assert len(releases) == 6
    assert any(e.url_path.endswith("/repos/acme/svc-120/releases") and e.status == 200
               for e in releases), [(e.url_path, e.status) for e in releases]
