"""The aiohttp application: webhook intake, health, metrics, and the background workers."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import gidgethub
from aiohttp import web
from gidgethub import routing, sansio
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot import __version__
from bot.attestations import tuf
from bot.attestations.trust import SigstoreTrust
from bot.github.client import GitHubClients, RetryPolicy
from bot.github.ratelimit import RateLimiter, Timer
from bot.github.transient import transient_failure
from bot.handlers import run_order
from bot.metrics import Metrics
from bot.registry.client import RegistryClient, RegistryPolicy
from bot.registry.credentials import AuthFile
from bot.registry.lookup import ImageLookup
from bot.render.build import Builder
from bot.render.tool import chart_rendering_text, rendering_text
from bot.runtime import offload
from bot.runtime.context import Context, utc_now
from bot.runtime.logs import delivery_id_var
from bot.runtime.queue import (
    DeliveryQueue,
    IntakeFirst,
    Job,
    JobRetry,
    MemoryQueue,
    RetryJob,
    WorkerPool,
)
from bot.runtime.scheduler import Scheduler
from bot.runtime.settings import Settings
from bot.services import Services
from bot.serving.acknowledge import WEBHOOK_PATH, Door, acknowledge, seen_deliveries

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    settings: Settings
    router: routing.Router
    services: Services
    queue: DeliveryQueue
    pool: WorkerPool
    door: Door
    background: list[asyncio.Task[None]]
    ready: bool = False
    starting: asyncio.Task[None] | None = None
    # Whether the shared delivery store (Redis) takes writes now: None = yes, else why not.
    store_probe: Callable[[], Awaitable[str | None]] | None = None

    @property
    def ctx(self) -> Context:
        return self.services.ctx


_RUNTIME: web.AppKey[Runtime] = web.AppKey("conveyor_runtime")


def runtime_of(app: web.Application) -> Runtime:
    return app[_RUNTIME]


def create_app(
    settings: Settings,
    router: routing.Router,
    *,
    clock: Callable[[], datetime] = utc_now,
    retry: RetryPolicy | None = None,
    timer: Timer | None = None,
    job_retry: JobRetry | None = None,
    registry_policy: RegistryPolicy | None = None,
    queue: DeliveryQueue | None = None,
    background: Callable[[Runtime], list[asyncio.Task[None]]] | None = None,
    serve_while_starting: bool = False,
) -> web.Application:
    """The application. With `serve_while_starting` the start-up work (the first GitHub call)
    runs after the site opens, so that `/healthz` answers 503 meanwhile; otherwise it is done
    before the runner returns, which is what in-process tests want."""
    metrics = Metrics()
    scaleout = None
    if queue is None and settings.redis_url:
        from bot.redisq import ScaleOut  # imported only here: the default needs no Redis client

        scaleout = ScaleOut.connect(settings, metrics, clock)
        queue = scaleout.queue
    policy = retry or RetryPolicy()
    limits = RateLimiter(store=scaleout.limits if scaleout is not None else None, timer=timer,
                         budget=settings.content_limits, metrics=metrics,
                         max_wait=policy.max_rate_limit_wait)
    clients = GitHubClients(
        api_url=settings.api_url,
        app_id=settings.app_id,
        private_key=settings.private_key,
        metrics=metrics,
        retry=policy,
        limits=limits,
    )
    intake: DeliveryQueue = queue or MemoryQueue(settings.queue_size, sleep=limits.timer.sleep)
    registry = RegistryClient(
        lambda: clients.session,
        credentials=AuthFile(settings.registry_auth_file, settings.registry_credentials)
        if settings.registry_auth_file is not None else settings.registry_credentials,
        endpoints=settings.registry_endpoints, policy=registry_policy,
        on_request=lambda host, status: metrics.registry_requests.labels(
            host, str(status) if status is not None else "none").inc())
    trust = SigstoreTrust(file=settings.sigstore_trust, repositories=() if
                          settings.sigstore_trust else (tuf.public_good(), tuf.github()))
    ctx = Context(clients=clients, metrics=metrics, scheduler=Scheduler(intake, clock),
                  images=ImageLookup(registry), clock=clock, app_id=int(settings.app_id),
                  builder=Builder(settings.kustomize, settings.helm)
                  if settings.kustomize or settings.helm else None,
                  attestations=trust)
    if scaleout is not None:  # shared by the replicas instead of per process
        ctx.scheduler, ctx.locks = scaleout.scheduler, scaleout.locks
        ctx.leases = scaleout.locks
    services = Services.build(ctx)
    metrics.registry.register(services.delivery)
    runtime = Runtime(
        settings=settings,
        router=router,
        services=services,
        queue=intake,
        pool=WorkerPool(intake, lambda job: process_job(runtime, job), workers=settings.workers,
                        retry=job_retry, metrics=metrics,
                        intake=IntakeFirst(backlog=intake.depth,
                                           most=max(1, settings.queue_size // 2))),
        door=Door(settings.max_body_bytes, settings.webhook_secret,
                  handled=lambda event: bool(router.fetch(event)), seen=seen_deliveries(),
                  offer=intake.offer, deliveries=metrics.deliveries,
                  accepted=lambda: metrics.queue_depth.set(intake.depth())),
        background=[],
        store_probe=scaleout.queue.writable if scaleout is not None else None,
    )
    clients.yield_to = runtime.pool.intake.wait
    # The body limit is enforced by the webhook handler itself so that it can answer 413.
    app = web.Application(client_max_size=settings.max_body_bytes + 1)
    app[_RUNTIME] = runtime
    app.router.add_post(WEBHOOK_PATH, webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)

    async def start() -> None:
        if scaleout is not None:
            scaleout.start()
        if trust.fetches:
            runtime.background.append(asyncio.create_task(trust.keep_fresh(),
                                                          name="conveyor-sigstore-trust"))
        runtime.pool.start()
        await learn_bot_login(runtime)
        runtime.ready = True
        if background is not None:
            runtime.background.extend(background(runtime))

    async def on_startup(_app: web.Application) -> None:
        if serve_while_starting:  # the socket answers (/healthz 503) during the first calls
            runtime.starting = asyncio.create_task(start(), name="conveyor-start")
        else:
            await start()

    async def on_shutdown(_app: web.Application) -> None:
        runtime.ready = False
        if runtime.starting is not None and not runtime.starting.done():
            runtime.starting.cancel()
            await asyncio.gather(runtime.starting, return_exceptions=True)
        for task in runtime.background:
            task.cancel()
        await asyncio.gather(*runtime.background, return_exceptions=True)
        runtime.ctx.scheduler.cancel_all()
        if scaleout is not None:
            scaleout.pause()
        finished = await runtime.pool.drain(settings.shutdown_grace)
        if not finished:
            log.warning("shutdown: in-flight work did not finish; the resync will redo it")
        if scaleout is not None:
            await scaleout.close()
        await clients.close()
        offload.shutdown()

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    return app


async def learn_bot_login(runtime: Runtime) -> None:
    """Ask GitHub who we are, so that our own comments are never taken as commands."""
    try:
        app_info = await runtime.ctx.clients.app().getitem("/app")
    except (gidgethub.GitHubException, OSError) as exc:
        log.warning("could not read the app's identity yet", extra={"error": str(exc)})
        return
    runtime.ctx.bot_login = f"{app_info['slug']}[bot]"


async def webhook(request: web.Request) -> web.Response:
    runtime = runtime_of(request.app)
    with runtime.pool.intake.answering():
        return await acknowledge(runtime.door, request)


async def process_job(runtime: Runtime, job: Job) -> None:
    """Run every handler of the job; one handler's failure never stops the others."""
    token = delivery_id_var.set(job.delivery_id)
    ctx = runtime.ctx
    started = time.monotonic()
    try:
        ctx.metrics.queue_depth.set(runtime.queue.depth())
        payload = job.payload()
        if payload is None:  # signed, routed on its leading action, yet not a JSON object
            ctx.metrics.handler_errors.labels(job.event).inc()
            log.error("delivery body is not a JSON object, nothing done",
                      extra={"event": job.event})
            return
        event = sansio.Event(payload, event=job.event, delivery_id=job.delivery_id)
        callbacks = runtime.router.fetch(event)
        installation = payload.get("installation")
        installation_id = installation.get("id") if isinstance(installation, dict) else None
        if not isinstance(installation_id, int):
            log.debug("event without an installation, nothing to do", extra={"event": job.event})
            return
        try:
            gh = await ctx.clients.installation(installation_id)
        except gidgethub.GitHubException as exc:
            ctx.metrics.handler_errors.labels(job.event).inc()
            log.error("no installation token", extra={"installation": installation_id,
                                                      "error": str(exc)})
            if transient_failure(exc):
                raise RetryJob(job.only) from exc
            return
        transient: list[str] = []
        for callback in sorted(callbacks, key=run_order):
            name = f"{callback.__module__}.{callback.__qualname__}"
            if job.only and name not in job.only:
                continue
            try:
                await callback(event, gh, runtime.services)
            except Exception as exc:
                ctx.metrics.handler_errors.labels(job.event).inc()
                if transient_failure(exc):
                    transient.append(name)
                log.exception(
                    "handler failed",
                    extra={"handler": name, "event": job.event,
                           "action": payload.get("action"), "attempt": job.attempt},
                )
        if transient:
            raise RetryJob(tuple(transient))
    finally:
        ctx.metrics.processing_seconds.labels(job.event).observe(time.monotonic() - started)
        delivery_id_var.reset(token)


async def healthz(request: web.Request) -> web.Response:
    """200 while deliveries can be accepted; 503 while starting or while the shared delivery
    store (Redis) refuses writes, so that a load balancer sends GitHub to another replica."""
    runtime = runtime_of(request.app)
    body: dict[str, Any] = {"status": "ok" if runtime.ready else "starting",
                            "version": __version__, "queue_depth": runtime.queue.depth(),
                            "rendering": rendering_text(runtime.settings.kustomize),
                            "chart_rendering": chart_rendering_text(runtime.settings.helm),
                            "sigstore": runtime.ctx.attestations.health()}
    healthy = runtime.ready
    if runtime.store_probe is not None:
        problem = await runtime.store_probe()
        body["redis"] = "ok" if problem is None else f"unavailable ({problem})"
        if problem is not None:
            healthy = False
            if runtime.ready:
                body["status"] = "redis unavailable"
    return web.json_response(body, status=200 if healthy else 503)


async def metrics_endpoint(request: web.Request) -> web.Response:
    runtime = runtime_of(request.app)
    runtime.ctx.metrics.queue_depth.set(runtime.queue.depth())
    body = generate_latest(runtime.ctx.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
