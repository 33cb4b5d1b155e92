"""Failed deliveries are asked for again, once each, and then processed; successful ones never."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

from aiohttp import web

from bot.github.deliveries import Redeliverer
from bot.sandbox.stack import serve
from bot.serving.acknowledge import WEBHOOK_PATH
from tests.harness import World
from tests.reliability.support import promotion_counts


@asynccontextmanager
async def failing_proxy(status: int) -> AsyncIterator[str]:
    """A load balancer in front of a bot that is down: answers every delivery with `status`."""

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=status, text="upstream unavailable")

    app = web.Application()
    app.router.add_post(WEBHOOK_PATH, answer)
    runner, port = await serve(app)
    try:
        yield f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    finally:
        await runner.cleanup()


async def test_failed_deliveries_are_redelivered_once_and_processed(rworld: World) -> None:
    world = rworld
    emulator = world.emulator
    # Delivered fine: these must never be asked for again.
    await world.release("web", "1.0.0")
    succeeded = {d.guid for d in emulator.deliveries}
    assert succeeded and all(200 <= d.status_code < 300 for d in emulator.deliveries)
    # The bot is down: connection refused (status 0) for web, 502 from the proxy for api.
    emulator.webhook_url = None
    web_digest = await world.release("web", "1.1.0")
    async with failing_proxy(502) as proxy:
        emulator.webhook_url = proxy
        api_digest = await world.release("api", "1.0.0")
    failed = {d.guid for d in emulator.deliveries} - succeeded
    codes = Counter(d.status_code for d in emulator.deliveries if d.guid in failed)
    assert set(codes) == {0, 502}, codes
    assert promotion_counts(emulator)[("web", "staging", web_digest)] == 0

    emulator.webhook_url = world.webhook_url
    redeliverer = Redeliverer(window=timedelta(hours=3), per_run=100)
    asked = await redeliverer.run(world.conveyor.ctx.clients.app(), world.clock())
    await world.settle()

    assert asked == len(failed)
    attempts = Counter(d.guid for d in emulator.deliveries if d.redelivery)
    assert attempts == Counter({guid: 1 for guid in failed})
    assert all(200 <= d.status_code < 300 for d in emulator.deliveries if d.redelivery)
    # ... and the redelivered events did their work.
    counts = promotion_counts(emulator)
    assert counts[("web", "staging", web_digest)] == 1
    assert counts[("api", "staging", api_digest)] == 1

    # Nothing is asked for twice: not by the same loop, nor by a new process (its memory is
    # empty, but every failed delivery now has a successful attempt).
    assert await redeliverer.run(world.conveyor.ctx.clients.app(), world.clock()) == 0
    assert await Redeliverer(per_run=100).run(world.conveyor.ctx.clients.app(),
                                              world.clock()) == 0
    await world.settle()
    assert sum(1 for d in emulator.deliveries if d.redelivery) == len(failed)


async def test_redelivery_is_bounded_per_run_and_by_age(rworld: World) -> None:
    world = rworld
    emulator = world.emulator
    emulator.webhook_url = None
    await world.release("web", "1.0.0")
    old = {d.guid for d in emulator.deliveries}
    world.clock.advance(hours=4)  # those failures are now outside the 3-hour window
    await world.release("api", "1.0.0")
    recent = {d.guid for d in emulator.deliveries} - old
    assert len(recent) > 2
    emulator.webhook_url = world.webhook_url
    redeliverer = Redeliverer(window=timedelta(hours=3), per_run=2)
    app = world.conveyor.ctx.clients.app()

    assert await redeliverer.run(app, world.clock()) == 2
    rounds = 1
    while await redeliverer.run(app, world.clock()):
        rounds += 1
        assert rounds <= len(recent)
    await world.settle()
    redelivered = Counter(d.guid for d in emulator.deliveries if d.redelivery)
    assert set(redelivered) == recent
    assert set(redelivered.values()) == {1}
