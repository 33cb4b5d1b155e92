"""GitHub's rate limits, per installation: a wait GitHub asks of one request holds every
request of the installation; a secondary-limit 403 without `Retry-After` waits a minute;
content-creating requests stay inside GitHub's per-minute and per-hour budget.

Time is the world's virtual time, shared by the bot and the emulator: the waits are honoured
to the second without the test sleeping for them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import gidgethub
import pytest

from bot.domain.write_budget import WriteBudget
from bot.github.ratelimit import RateLimitError, write_wait
from bot.sandbox.demo import DEPLOY_REPO, release
from tests.harness import close_world
from tests.reliability.support import (
    SendJournal,
    assert_one_pr_per_promotion,
    auto_files,
    build_world,
    metric_samples,
    promotion_counts,
)
from tests.reliability.test_faults import SERVICES


def test_write_wait_keeps_to_both_windows() -> None:
    budget = WriteBudget(per_minute=3, per_hour=5, margin=1.0)
    assert write_wait([], 100.0, budget) == 0
    assert write_wait([10.0, 20.0], 30.0, budget) == 0
    # the minute is full: the oldest of the last three leaves at 10 + 61
    assert write_wait([10.0, 20.0, 30.0], 40.0, budget) == pytest.approx(31.0)
    # the hour is full although the minute is not: the oldest leaves at 0 + 3601
    assert write_wait([0.0, 100.0, 200.0, 300.0, 400.0], 500.0, budget) == pytest.approx(3101.0)
    # writes older than the window do not count
    assert write_wait([0.0, 1.0, 2.0], 70.0, budget) == 0


async def test_a_wait_holds_every_request_of_the_installation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Secondary limits with `Retry-After` and without it, while three releases run on four
    workers: no request is sent inside a window the installation was told to wait, and the
    promotions all open (nothing left to the resync)."""
    world = await build_world(files=auto_files(), source_repos=("acme/worker",), workers=4)
    journal = SendJournal(world, monkeypatch)
    emulator = world.emulator
    try:
        emulator.dice.rng.seed(17)
        emulator.faults.update({"secondary_rate_limit_rate": 0.05, "retry_after": 2,
                                "bare_secondary_rate": 0.02})
        await asyncio.gather(*(release(world.emulator, service, "1.0.0")
                               for service in SERVICES))
        await world.settle(rounds=2000)

        windows = emulator.secondary.opened
        bare = [w for w in windows if w[2] - w[1] >= 60]
        assert len(windows) >= 3 and bare, windows  # both kinds were answered
        assert journal.told() >= len(windows)
        assert journal.sent_inside_windows() == []
        # the bare 403s were waited out for a full minute each
        assert world.time.slept >= 60
        counts = promotion_counts(emulator)
        assert sorted(key[:2] for key in counts) == sorted(
            (service, env) for service in SERVICES for env in ("staging", "production"))
        assert_one_pr_per_promotion(emulator)
        metrics = world.conveyor.ctx.metrics
        waited = metric_samples(_metrics_text(metrics), "conveyor_github_wait_seconds_total")
        assert waited[(("reason", "rate_limited"),)] >= 60
    finally:
        await close_world(world)


async def test_a_wait_told_to_the_app_holds_the_apps_own_requests(rworld: Any) -> None:
    """Requests the app makes as itself (a JWT: listing installations, minting tokens) are
    counted against the app, not an installation ("Rate limits for GitHub Apps": the
    installation's limit is that of requests made with an installation access token). A
    secondary limit told to one of them holds the app's requests until `Retry-After` has
    passed; every attempt here is refused afresh, and none is sent inside a window."""
    world = rworld
    emulator = world.emulator
    emulator.faults.update({"secondary_rate_limit_rate": 1.0, "retry_after": 30})
    started = world.time.now()
    with pytest.raises(gidgethub.GitHubException):
        await world.conveyor.ctx.clients.app().getitem("/app/installations")
    assert [(hit.method, hit.path) for hit in emulator.secondary.inside] == []
    windows = [(key, round(end - start)) for key, start, end in emulator.secondary.opened]
    assert windows == [("app", 30)] * 5  # each attempt waited for the window before it
    assert world.time.now() - started >= 4 * 30


async def test_a_wait_told_to_an_installation_does_not_hold_its_token_request(
        rworld: Any) -> None:
    """The installation's window binds the requests made with its token; minting the token is
    the app's own request (a JWT), counted against the app: it goes out at once."""
    world = rworld
    clients = world.conveyor.ctx.clients
    installation = world.demo.installation_id
    await clients.limits.hold(installation, 60)
    clients.auth.forget(installation)
    started, minted = world.time.now(), clients.auth.tokens_minted
    gh = await clients.installation(installation)
    assert clients.auth.tokens_minted == minted + 1 and world.time.now() == started
    await gh.getitem(f"/repos/{DEPLOY_REPO}")  # the installation's own request waits
    assert world.time.now() - started >= 60


async def test_writes_are_paced_inside_githubs_content_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """560 comments from one installation at once: GitHub allows 80 a minute and 500 an hour
    (the emulator answers 403 + Retry-After beyond that). The bot sends 80 a minute; once the
    hour's 500 are spent, a write that would wait longer than a job may sleep fails without
    being sent (its job is retried, or the resync redoes it)."""
    world = await build_world()
    journal = SendJournal(world, monkeypatch)
    emulator = world.emulator
    try:
        issue = await emulator.open_issue(DEPLOY_REPO, "Pacing", author="alice")
        gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
        started = world.time.now()
        url = f"/repos/{DEPLOY_REPO}/issues/{issue['number']}/comments"
        results = await asyncio.gather(
            *(gh.post(url, data={"body": f"comment {i}"}) for i in range(560)),
            return_exceptions=True)

        refused = [r for r in results if isinstance(r, RateLimitError)]
        assert len(refused) == 60, {type(r).__name__ for r in results}
        assert emulator.secondary.opened == []
        assert len(emulator.comments(DEPLOY_REPO, issue["number"])) == 500
        sends = [at for kind, inst, at, what in journal.events
                 if kind == "send" and inst == world.demo.installation_id
                 and what.startswith("POST")]
        assert len(sends) == 500
        for i in range(len(sends)):
            assert sum(1 for at in sends[i:] if at < sends[i] + 60) <= 80
        # 500 writes at 80 a minute: six full minutes of waiting
        assert world.time.now() - started >= 6 * 60
        waited = metric_samples(_metrics_text(world.conveyor.ctx.metrics),
                                "conveyor_github_wait_seconds_total")
        assert waited[(("reason", "pacing"),)] >= 6 * 60
    finally:
        await close_world(world)


async def test_a_server_without_content_limits_takes_writes_unpaced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`CONVEYOR_CONTENT_LIMITS=off` against a GitHub Enterprise Server whose administrator left
    rate limits off: 600 comments go out one after another without a wait (GitHub would
    have allowed 80 a minute), and the server takes every one."""
    world = await build_world(content_limits=None, rate_limiting=False)
    journal = SendJournal(world, monkeypatch)
    try:
        emulator = world.emulator
        issue = await emulator.open_issue(DEPLOY_REPO, "Unpaced", author="alice")
        gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
        started = world.time.now()
        url = f"/repos/{DEPLOY_REPO}/issues/{issue['number']}/comments"
        await asyncio.gather(*(gh.post(url, data={"body": f"comment {i}"}) for i in range(600)))
        assert len(emulator.comments(DEPLOY_REPO, issue["number"])) == 600
        assert emulator.secondary.opened == [] and world.time.now() == started
        assert sum(1 for kind, _inst, _at, what in journal.events
                   if kind == "send" and what.endswith("/comments")) == 600
    finally:
        await close_world(world)


async def test_content_limits_of_a_server_set_lower_are_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A server whose administrator set 20 content-creating requests a minute
    (`CONVEYOR_CONTENT_LIMITS=20/min`): the bot sends 20 a minute, no hour limit."""
    world = await build_world(content_limits=WriteBudget(per_minute=20, per_hour=None))
    journal = SendJournal(world, monkeypatch)
    try:
        emulator = world.emulator
        emulator.faults.update({"content_per_minute": 20, "content_per_hour": 0})
        issue = await emulator.open_issue(DEPLOY_REPO, "Paced", author="alice")
        gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
        started = world.time.now()
        url = f"/repos/{DEPLOY_REPO}/issues/{issue['number']}/comments"
        await asyncio.gather(*(gh.post(url, data={"body": f"comment {i}"}) for i in range(100)))
        assert len(emulator.comments(DEPLOY_REPO, issue["number"])) == 100
        assert emulator.secondary.opened == []
        sends = [at for kind, _inst, at, what in journal.events
                 if kind == "send" and what.endswith("/comments")]
        assert len(sends) == 100 and all(sum(1 for at in sends[i:] if at < sends[i] + 60) <= 20
                   for i in range(len(sends)))
        assert world.time.now() - started >= 4 * 60  # 100 writes at 20 a minute
    finally:
        await close_world(world)


def _metrics_text(metrics: Any) -> str:
    from prometheus_client import generate_latest

    return generate_latest(metrics.registry).decode()


async def test_a_text_over_githubs_limit_is_never_sent(rworld: Any) -> None:
    from bot.github.limits import TextTooLong

    world = rworld
    issue = await world.emulator.open_issue(DEPLOY_REPO, "Limits", author="alice")
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    before = len(world.emulator.requests.entries)
    with pytest.raises(TextTooLong, match="body has 65,537 characters"):
        await gh.post(f"/repos/{DEPLOY_REPO}/issues/{issue['number']}/comments",
                      data={"body": "x" * 65_537})
    with pytest.raises(TextTooLong, match="51 annotations"):
        await gh.post(f"/repos/{DEPLOY_REPO}/check-runs", data={
            "name": "c", "head_sha": "0" * 40,
            "output": {"title": "t", "summary": "s", "annotations": [{}] * 51}})
    assert len(world.emulator.requests.entries) == before


def test_fit_keeps_the_trailing_markers() -> None:
    from bot.github.limits import fit

    text = "a" * 70_000 + "\n\n<!-- conveyor:{\"x\": 1} -->"
    fitted = fit(text, 65_536)
    assert len(fitted) <= 65_536
    assert fitted.endswith('<!-- conveyor:{"x": 1} -->')
    assert "shortened to fit GitHub's limit of 65,536 characters" in fitted
    assert fit("short") == "short"
