"""The aiohttp application of the work: the webhook, health and metrics, and the start and stop
of what `composition.compose` builds (the workers, Redis's parts, the background loops)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gidgethub
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot import __version__
from bot.capabilities import Capabilities
from bot.render.tool import chart_rendering_text, rendering_text
from bot.runtime import offload
from bot.runtime.context import Context
from bot.runtime.queue import DeliveryQueue, WorkerPool
from bot.runtime.settings import Settings
from bot.serving.acknowledge import WEBHOOK_PATH, Door, acknowledge
from bot.serving.composition import NO_OVERRIDES, Composition, Overrides, compose

log = logging.getLogger(__name__)


@dataclass
class Conveyor:
    """One running app: what was composed, and where its start and stop are."""

    composed: Composition
    background: list[asyncio.Task[None]] = field(default_factory=list)
    ready: bool = False
    starting: asyncio.Task[None] | None = None

    @property
    def settings(self) -> Settings:
        return self.composed.settings

    @property
    def ctx(self) -> Context:
        return self.composed.ctx

    @property
    def capabilities(self) -> Capabilities:
        return self.composed.capabilities

    @property
    def queue(self) -> DeliveryQueue:
        return self.composed.queue

    @property
    def pool(self) -> WorkerPool:
        return self.composed.pool

    @property
    def door(self) -> Door:
        return self.composed.door


_CONVEYOR: web.AppKey[Conveyor] = web.AppKey("conveyor")


def conveyor_of(app: web.Application) -> Conveyor:
    return app[_CONVEYOR]


def create_app(settings: Settings, overrides: Overrides = NO_OVERRIDES, *,
               background: Callable[[Conveyor], list[asyncio.Task[None]]] | None = None,
               serve_while_starting: bool = False) -> web.Application:
    """The application. With `serve_while_starting` the start-up work (the first GitHub call)
    runs after the site opens, so that `/healthz` answers 503 meanwhile; otherwise it is done
    before the runner returns, which is what in-process tests want."""
    conveyor = Conveyor(compose(settings, overrides))
    # The body limit is enforced by the webhook handler itself so that it can answer 413.
    app = web.Application(client_max_size=settings.max_body_bytes + 1)
    app[_CONVEYOR] = conveyor
    app.router.add_post(WEBHOOK_PATH, webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)

    async def on_startup(_app: web.Application) -> None:
        if serve_while_starting:  # the socket answers (/healthz 503) during the first calls
            conveyor.starting = asyncio.create_task(start(conveyor, background),
                                                    name="conveyor-start")
        else:
            await start(conveyor, background)

    async def on_shutdown(_app: web.Application) -> None:
        await stop(conveyor)

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    return app


async def start(conveyor: Conveyor,
                background: Callable[[Conveyor], list[asyncio.Task[None]]] | None) -> None:
    composed = conveyor.composed
    if composed.scaleout is not None:
        composed.scaleout.start()
    if composed.trust.fetches:
        conveyor.background.append(asyncio.create_task(composed.trust.keep_fresh(),
                                                       name="conveyor-sigstore-trust"))
    composed.pool.start()
    await learn_bot_login(conveyor.ctx)
    conveyor.ready = True
    if background is not None:
        conveyor.background.extend(background(conveyor))


async def stop(conveyor: Conveyor) -> None:
    composed = conveyor.composed
    conveyor.ready = False
    if conveyor.starting is not None and not conveyor.starting.done():
        conveyor.starting.cancel()
        await asyncio.gather(conveyor.starting, return_exceptions=True)
    for task in conveyor.background:
        task.cancel()
    await asyncio.gather(*conveyor.background, return_exceptions=True)
    conveyor.ctx.scheduler.cancel_all()
    if composed.scaleout is not None:
        composed.scaleout.pause()
    finished = await composed.pool.drain(composed.settings.shutdown_grace)
    if not finished:
        log.warning("shutdown: in-flight work did not finish; the resync will redo it")
    if composed.scaleout is not None:
        await composed.scaleout.close()
    await conveyor.ctx.clients.close()
    offload.shutdown()


async def learn_bot_login(ctx: Context) -> None:
    """Ask GitHub who we are, so that our own comments are never taken as commands."""
    try:
        app_info = await ctx.clients.app().getitem("/app")
    except (gidgethub.GitHubException, OSError) as exc:
        log.warning("could not read the app's identity yet", extra={"error": str(exc)})
        return
    ctx.identity.login = f"{app_info['slug']}[bot]"


async def webhook(request: web.Request) -> web.Response:
    conveyor = conveyor_of(request.app)
    with conveyor.pool.intake.answering():
        return await acknowledge(conveyor.door, request)


async def healthz(request: web.Request) -> web.Response:
    """200 while deliveries can be accepted; 503 while starting or while the shared delivery
    store (Redis) refuses writes, so that a load balancer sends GitHub to another replica."""
    conveyor = conveyor_of(request.app)
    body: dict[str, Any] = {"status": "ok" if conveyor.ready else "starting",
                            "version": __version__, "queue_depth": conveyor.queue.depth(),
                            "rendering": rendering_text(conveyor.settings.kustomize),
                            "chart_rendering": chart_rendering_text(conveyor.settings.helm),
                            "sigstore": conveyor.ctx.attestations.health()}
    healthy = conveyor.ready
    scaleout = conveyor.composed.scaleout
    if scaleout is not None:  # whether the shared delivery store takes writes now
        problem = await scaleout.queue.writable()
        body["redis"] = "ok" if problem is None else f"unavailable ({problem})"
        if problem is not None:
            healthy = False
            if conveyor.ready:
                body["status"] = "redis unavailable"
    return web.json_response(body, status=200 if healthy else 503)


async def metrics_endpoint(request: web.Request) -> web.Response:
    conveyor = conveyor_of(request.app)
    conveyor.ctx.metrics.queue_depth.set(conveyor.queue.depth())
    body = generate_latest(conveyor.ctx.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
