"""Whatever the process was doing when it died, the resync finishes it: a `promote: auto`
environment ends with one open PR for the newest digest its upstream runs, the older one is
superseded exactly once, no promotion branch is left without its PR, and the open PR has its
labels and its gate.

Each case kills the job that opens production's newer promotion right after GitHub answered
one of its requests (the work of that request is done, the rest of the job is not), then runs
the resync. The bot is the real app over HTTP; the kill is an exception raised after the
answer, which no retry catches: the job ends there, as a SIGKILLed process's would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bot.github.client import ConveyorGitHubAPI
from bot.names import GATE_CHECK
from bot.promotion.resync.reconcile import resync_all
from bot.promotion.triggers.flows import promote_to_entry_environments, release_candidate
from bot.sandbox.demo import digest_of
from tests.harness import World, close_world
from tests.reliability.support import (
    assert_no_half_made_branches,
    assert_one_pr_per_promotion,
    auto_files,
    build_world,
    promotion_counts,
    promotion_prs,
)

OLD, NEW = "1.0.0", "1.1.0"
BRANCH = f"conveyor/production/web-{digest_of(f'web:{NEW}')[7:19]}"
PROD_FILE = "apps/web/overlays/prod/kustomization.yaml"


class Killed(Exception):
    """The process died right after this request was answered."""


Request = tuple[str, str, dict[str, Any]]  # method, URL, JSON body


def opening(request: Request) -> bool:
    return request[0] == "POST" and request[1].endswith("/pulls") \
        and request[2].get("head") == BRANCH


KILL_POINTS: dict[str, Callable[[Request], bool]] = {
    "before the downstream opened anything": lambda r: r[0] == "GET" and BRANCH in r[1],
    "after the branch was created": lambda r: r[0] == "POST" and r[1].endswith("/git/refs")
    and r[2].get("ref") == f"refs/heads/{BRANCH}",
    "after the commit": lambda r: r[0] == "PUT" and PROD_FILE in r[1]
    and r[2].get("branch") == BRANCH,
    "after the PR was opened": opening,
    "after the labels": lambda r: r[0] == "POST" and r[1].endswith("/labels")
    and "env/production" in r[2].get("labels", []),
    "after the superseded comment": lambda r: r[0] == "POST" and r[1].endswith("/comments")
    and str(r[2].get("body", "")).startswith("Superseded by"),
    "after closing the older PR": lambda r: r[0] == "PATCH" and r[2].get("state") == "closed",
}


def kill_after(monkeypatch: pytest.MonkeyPatch, point: Callable[[Request], bool]) -> list[str]:
    """Arm the kill: the first request `point` matches is answered, then the job dies."""
    fired: list[str] = []
    send = ConveyorGitHubAPI._send

    async def send_then_die(api: ConveyorGitHubAPI, method: str, url: str,
                            headers: Any, body: bytes) -> Any:
        answer = await send(api, method, url, headers, body)
        data = json.loads(body) if body else {}
        if not fired and isinstance(data, dict) and point((method, url, data)) \
                and answer[0] < 400:
            fired.append(f"{method} {url}")
            raise Killed(f"{method} {url}")
        return answer

    monkeypatch.setattr(ConveyorGitHubAPI, "_send", send_then_die)
    return fired


@pytest.fixture
async def auto_world() -> Any:
    world = await build_world(files=auto_files(), source_repos=("acme/worker",))
    try:
        yield world
    finally:
        await close_world(world)


@pytest.mark.parametrize("point", list(KILL_POINTS))
async def test_the_resync_finishes_a_downstream_promotion_killed_midway(
        auto_world: World, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    world = auto_world
    emulator = world.emulator
    older = await world.release("web", OLD)
    [before] = production_prs(world)
    assert before["digest"] == older
    fired = kill_after(monkeypatch, KILL_POINTS[point])
    newer = await world.release("web", NEW)
    assert fired, f"the kill point {point!r} was never reached"
    monkeypatch.undo()

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    await resync_all(world.conveyor.capabilities.resync)  # a second pass changes nothing
    await world.settle()

    staging = emulator.file(world.repo, "apps/web/overlays/staging/kustomization.yaml")
    assert staging is not None and newer in staging
    [after] = production_prs(world)
    assert after["digest"] == newer, f"killed {point}: {fired}"
    pr = after["pr"]
    assert {label["name"] for label in pr["labels"]} >= {"conveyor", "env/production"}
    gates = emulator.check_runs(world.repo, pr["head"]["sha"], GATE_CHECK)
    assert [run["conclusion"] for run in gates] == ["action_required"]
    [old] = [p for p in emulator.pulls(world.repo, state="all")
             if p["number"] == before["pr"]["number"]]
    assert old["state"] == "closed" and not old["merged"]
    superseded = [c["body"] for c in emulator.comments(world.repo, old["number"])
                  if str(c["body"]).startswith("Superseded by")]
    assert superseded == [f"Superseded by #{pr['number']}."]
    assert_one_pr_per_promotion(emulator)
    assert_no_half_made_branches(emulator)


def production_prs(world: World) -> list[dict[str, Any]]:
    """The open production promotions of web, with their digest."""
    return [{"pr": item["pr"], "digest": item["marker"].digest}
            for item in promotion_prs(world.emulator)
            if item["marker"].environment == "production" and item["marker"].service == "web"
            and item["pr"]["state"] == "open"]


async def test_a_late_merge_event_of_an_older_digest_opens_nothing_downstream(
        auto_world: World) -> None:
    """Staging merges 1.0.0, then 1.1.0, and the merge event of 1.0.0 arrives only then (late,
    or redelivered): `promote: auto` follows what staging runs now, so production gets 1.1.0's
    PR alone, and no PR for 1.0.0 that would be superseded a moment later."""
    world = auto_world
    emulator = world.emulator
    ctx, capabilities = world.conveyor.ctx, world.conveyor.capabilities
    gh = await ctx.clients.installation(world.demo.installation_id)
    [repo] = await capabilities.policies.load(gh, world.demo.installation_id)
    emulator.webhook_url = None  # nothing reaches the bot while staging moves twice
    digests = {}
    for version in (OLD, NEW):
        digests[version] = await world.release("web", version)
        release = next(r for r in emulator.releases("acme/web")
                       if r["tag_name"] == f"v{version}")
        candidate = await release_candidate(ctx, gh, repo, "web", release, "acme/web")
        assert candidate is not None
        await promote_to_entry_environments(capabilities.promoter, gh, repo, candidate, "release")
    merges = {version: next(d for d in emulator.deliveries if d.event == "pull_request"
                            and d.action == "closed" and version in d.payload[
                                "pull_request"]["title"]) for version in (OLD, NEW)}
    emulator.webhook_url = world.webhook_url

    before = len(emulator.requests.entries)
    assert await emulator.redeliver(merges[OLD].id) == 202
    await world.settle()
    assert production_prs(world) == []
    late = emulator.requests.entries[before:]
    # (the source repository still hears of the deployment: 1.0.0 did run in staging)
    assert [(e.method, e.path) for e in late if e.method in ("POST", "PATCH", "PUT", "DELETE")
            and e.url_path.startswith(f"/api/v3/repos/{world.repo}/")] == []

    assert await emulator.redeliver(merges[NEW].id) == 202
    await world.settle()
    assert [p["digest"] for p in production_prs(world)] == [digests[NEW]]
    assert [key for key in promotion_counts(emulator) if key[1] == "production"] == [
        ("web", "production", digests[NEW])]
