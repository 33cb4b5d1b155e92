"""What policy discovery and the resync cost as an installation holds more repositories, over
HTTP and counted by the emulator: a repository without a policy is not asked again while the
installation's list shows the same `pushed_at`, an `installation_repositories` event reads
only the repositories it names, and a push or a release whose event was lost is still found."""

from __future__ import annotations

from collections import Counter
from http import HTTPStatus
from typing import Any

import gidgethub
import pytest

from benchmarks.scale import install_repositories
from bot.promotion import policies
from bot.promotion.policies import PolicyIndex
from bot.promotion.resync.reconcile import resync_all
from conveyor_emulator.faults.requestlog import RequestEntry
from tests.harness import World, close_world, make_world

R = "/repos/{owner}/{repo}"


def counted(entries: list[RequestEntry]) -> Counter[tuple[str, str, int]]:
    return Counter((e.method, e.path, e.status) for e in entries if e.installation_id)


async def quiet_resyncs(world: World) -> None:
    """Two resyncs ten minutes apart (the default interval): everything listed has settled."""
    for _ in range(2):
        world.clock.advance(minutes=10)
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()


async def test_an_idle_resync_reads_no_head_of_a_repository_without_a_policy(world: World
                                                                             ) -> None:
    await quiet_resyncs(world)
    world.emulator.requests.reset()
    world.clock.advance(minutes=10)
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    idle = counted(world.emulator.requests.entries)
    assert {status for _, _, status in idle} == {304}, idle
    # acme/web and acme/api hold no policy: the installation's list (one page, `304`)
    # answers for both; only the deployment repository's branch head is read
    heads = [e.url_path for e in world.emulator.requests.entries
             if e.path == R + "/git/ref/{ref}"]
    assert heads and all(f"/repos/{world.repo}/" in path for path in heads), heads
    assert idle[("GET", "/installation/repositories", 304)] == 1


async def test_a_policy_pushed_to_a_settled_repository_is_found_by_the_next_resync(
        world: World) -> None:
    await quiet_resyncs(world)
    world.emulator.webhook_url = None  # the push event is lost
    policy = world.emulator.file(world.repo, ".github/conveyor.yml")
    assert policy is not None
    world.clock.advance(seconds=1)
    await world.emulator.push_files("acme/web", {".github/conveyor.yml": policy}, author="bob")
    world.emulator.webhook_url = world.webhook_url
    world.emulator.requests.reset()
    assert await resync_all(world.conveyor.capabilities.resync) == 2
    reads = [e.url_path for e in world.emulator.requests.entries
             if e.path == R + "/contents/{path}" and e.status == 200]
    assert any(path.endswith("/repos/acme/web/contents/.github/conveyor.yml")
               for path in reads), reads


async def test_a_repository_added_to_the_installation_is_read_alone(world: World) -> None:
    await quiet_resyncs(world)
    world.emulator.add_repo("acme/docs", files={"README.md": "# docs\n"})
    world.emulator.requests.reset()
    await world.emulator.add_installation_repos(world.demo.installation_id, ["acme/docs"])
    await world.settle()
    # GraphQL shows it holds no policy (in place of a 404); nothing of the other repositories
    # or of the installation's list is read
    assert counted(world.emulator.requests.entries) == {
        ("POST", "/graphql", 200): 1}, world.emulator.requests.entries
    world.emulator.requests.reset()
    world.clock.advance(minutes=10)
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    docs = [(e.path, e.status) for e in world.emulator.requests.entries
            if "/repos/acme/docs/" in e.url_path]
    # not remembered yet (the event names no `pushed_at`): one GraphQL query shows it still
    # holds no policy, in place of a 404; then remembered with the list's `pushed_at`
    assert docs == [], docs
    assert [(e.path, e.status) for e in world.emulator.requests.entries
            if e.resource == "graphql"] == [("/graphql", 200)]
    world.emulator.requests.reset()
    world.clock.advance(minutes=10)
    await resync_all(world.conveyor.capabilities.resync)
    assert not [e for e in world.emulator.requests.entries
                if "/repos/acme/docs/" in e.url_path]


async def test_150_repositories_added_at_once_cost_two_graphql_queries(world: World) -> None:
    """One policy among them: only its file is read over REST."""
    await quiet_resyncs(world)
    names = [f"acme/tool-{index:03d}" for index in range(150)]
    policy = world.emulator.file(world.repo, ".github/conveyor.yml")
    assert policy is not None
    for name in names:
        world.emulator.add_repo(name, files={"README.md": "# tool\n"})
    await world.emulator.push_files(names[70], {".github/conveyor.yml": policy}, author="bob")
    world.emulator.requests.reset()
    await world.emulator.add_installation_repos(world.demo.installation_id, names)
    await world.settle()
    made = counted(world.emulator.requests.entries)
    assert made[("POST", "/graphql", 200)] == 2, made
    assert made[("GET", R + "/contents/{path}", 200)] == 1, made
    assert not any(status == 404 for _, _, status in made), made
    indexed = world.conveyor.capabilities.policies.installed(world.demo.installation_id)
    assert set(names) <= set(indexed)


async def test_a_repository_removed_from_the_installation_is_forgotten_without_a_read(
        world: World) -> None:
    await quiet_resyncs(world)
    world.emulator.requests.reset()
    await world.emulator.remove_installation_repos(world.demo.installation_id, ["acme/api"])
    await world.settle()
    assert counted(world.emulator.requests.entries) == {}
    policies = world.conveyor.capabilities.policies
    assert "acme/api" not in policies.installed(world.demo.installation_id)


async def discover(world: World) -> list[RequestEntry]:
    """A fresh index's discovery ten minutes after the repositories were last pushed (their
    `pushed_at` stands for their heads): the requests it made."""
    world.clock.advance(minutes=10)
    gh = await world.conveyor.capabilities.ctx.clients.installation(world.demo.installation_id)
    world.emulator.requests.reset()
    repos = await PolicyIndex().load(gh, world.demo.installation_id, now=world.clock.now)
    assert [repo.full_name for repo in repos] == [world.repo]
    return list(world.emulator.requests.entries)


async def test_discovery_asks_graphql_which_of_100_repositories_hold_a_policy(
        world: World) -> None:
    names = [f"acme/tool-{index:03d}" for index in range(247)]
    await install_repositories(world.emulator, world.demo.installation_id, names)
    made = await discover(world)
    # 250 repositories: the list in three pages, three GraphQL queries (100, 100, 50) and the
    # deployment repository's policy over REST; not one 404
    assert counted(made) == {("GET", "/installation/repositories", 200): 3,
                             ("POST", "/graphql", 200): 3,
                             ("GET", R + "/contents/{path}", 200): 1}, counted(made)
    assert [e.resource for e in made if e.path == "/graphql"] == ["graphql"] * 3


async def test_discovery_reads_over_rest_what_graphql_does_not_answer(world: World) -> None:
    key = f"graphql:installation:{world.demo.installation_id}"
    while world.emulator.rate_limits.remaining(key):  # GraphQL's own budget is spent
        world.emulator.rate_limits.spend(key)
    made = await discover(world)
    # GraphQL answers RATE_LIMITED: each repository's policy is read as without GraphQL
    assert counted(made) == {("GET", "/installation/repositories", 200): 1,
                             ("POST", "/graphql", 200): 1,
                             ("GET", R + "/contents/{path}", 200): 1,
                             ("GET", R + "/contents/{path}", 404): 2}, counted(made)


async def test_discovery_reads_over_rest_when_graphql_fails(world: World) -> None:
    world.emulator.faults.graphql_error_rate = 1.0
    made = await discover(world)
    assert counted(made) == {("GET", "/installation/repositories", 200): 1,
                             ("POST", "/graphql", 502): 1,
                             ("GET", R + "/contents/{path}", 200): 1,
                             ("GET", R + "/contents/{path}", 404): 2}, counted(made)


async def test_a_repository_whose_policy_read_fails_fails_discovery_once_the_others_are_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    index = PolicyIndex()
    world = await make_world()
    try:
        gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
        reading = policies.get_file

        async def flaky(client: Any, repo: str, path: str, *args: Any, **kwargs: Any) -> Any:
            raise gidgethub.GitHubBroken(HTTPStatus.BAD_GATEWAY)  # for the policy

        monkeypatch.setattr(policies, "get_file", flaky)
        world.emulator.requests.reset()
        with pytest.raises(gidgethub.GitHubBroken):
            await index.load(gh, world.demo.installation_id)
        # the repositories GraphQL showed without a policy were read meanwhile (their heads)
        heads = sorted(e.url_path.split("/")[5] for e in world.emulator.requests.entries
                       if e.path == R + "/git/ref/{ref}")
        assert heads == ["api", "web"]
        monkeypatch.setattr(policies, "get_file", reading)
        [repo] = await index.load(gh, world.demo.installation_id)  # not loaded: read again
        assert repo.full_name == world.repo
    finally:
        await close_world(world)
