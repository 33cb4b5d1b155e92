"""The composition root: every part of one app built once, by its constructor, from the
settings and in the order each needs the others. The infrastructure first (metrics, Redis when
it is set, the rate limiter, the queue, GitHub and registry clients, the Sigstore trust, the
scheduler, locks and leases: Redis's when it is there), then the promotion capabilities on
it, the handlers bound to the capabilities they use, what runs a job, the workers, and the
webhook's door. Nothing is assigned to any of them afterwards."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from bot.attestations import tuf
from bot.attestations.trust import SigstoreTrust
from bot.capabilities import Capabilities
from bot.github.client import GitHubClients, RetryPolicy
from bot.github.ratelimit import RateLimiter, Timer
from bot.handlers import handlers_for
from bot.handlers.routes import Handlers
from bot.metrics import Metrics
from bot.promotion.commands.command_run import CommandCapabilities
from bot.promotion.dashboard.issue import DashboardCapabilities
from bot.promotion.dashboard.status import StatusSources
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.policies import PolicyIndex
from bot.promotion.resync.reconcile import ResyncCapabilities
from bot.promotion.resync.release_polls import ReleasePolls
from bot.promotion.triggers.flows import Promoter
from bot.promotion.triggers.merging import GateThenMerge
from bot.promotion.triggers.packages import PackagePromoter
from bot.promotion.watching.delivery_board import DeliveryBoard
from bot.registry.client import RegistryClient, RegistryPolicy
from bot.registry.credentials import AuthFile
from bot.registry.lookup import ImageLookup
from bot.render.build import Builder
from bot.runtime.context import Context, utc_now
from bot.runtime.leases import Leases, LocalLeases
from bot.runtime.queue import (
    DeliveryQueue,
    IntakeFirst,
    JobRetry,
    KeyedLocks,
    MemoryQueue,
    RepoLocks,
    WorkerPool,
)
from bot.runtime.scheduler import Scheduler
from bot.runtime.settings import Settings
from bot.serving.acknowledge import Door, seen_deliveries
from bot.serving.jobs import JobRunner

if TYPE_CHECKING:
    from bot.redisq import ScaleOut


@dataclass(frozen=True)
class Overrides:
    """What the tests, the sandbox, the benchmarks and the workers process set beside the
    settings: the clock and timers, retry pacing, and a queue fed from elsewhere."""

    clock: Callable[[], datetime] = utc_now
    retry: RetryPolicy | None = None
    timer: Timer | None = None
    job_retry: JobRetry | None = None
    registry_policy: RegistryPolicy | None = None
    queue: DeliveryQueue | None = None


NO_OVERRIDES = Overrides()


@dataclass(frozen=True)
class Composition:
    """One app, composed."""

    settings: Settings
    ctx: Context
    capabilities: Capabilities
    handlers: Handlers
    queue: DeliveryQueue
    pool: WorkerPool
    door: Door
    trust: SigstoreTrust
    scaleout: ScaleOut | None


def compose(settings: Settings, overrides: Overrides = NO_OVERRIDES) -> Composition:
    metrics = Metrics()
    scaleout = None
    queue = overrides.queue
    if queue is None and settings.redis_url:
        from bot.redisq import ScaleOut  # imported only here: the default needs no Redis client

        scaleout = ScaleOut.connect(settings, metrics, overrides.clock)
        queue = scaleout.queue
    retry = overrides.retry or RetryPolicy()
    limits = RateLimiter(store=scaleout.limits if scaleout is not None else None,
                         timer=overrides.timer, budget=settings.content_limits,
                         metrics=metrics, max_wait=retry.max_rate_limit_wait)
    intake: DeliveryQueue = queue or MemoryQueue(settings.queue_size, sleep=limits.timer.sleep)
    intake_first = IntakeFirst(backlog=intake.depth, most=max(1, settings.queue_size // 2))
    clients = GitHubClients(api_url=settings.api_url, app_id=settings.app_id,
                            private_key=settings.private_key, metrics=metrics, retry=retry,
                            limits=limits, yield_to=intake_first.wait)
    trust = SigstoreTrust(file=settings.sigstore_trust, repositories=() if
                          settings.sigstore_trust else (tuf.public_good(), tuf.github()))
    ctx = _context(settings, overrides, clients, metrics, intake, trust, scaleout)
    capabilities = compose_capabilities(ctx)
    metrics.registry.register(capabilities.delivery)
    handlers = handlers_for(capabilities)
    pool = WorkerPool(intake, JobRunner(handlers, ctx, intake), workers=settings.workers,
                      retry=overrides.job_retry, metrics=metrics, intake=intake_first)
    door = Door(settings.max_body_bytes, settings.webhook_secret,
                handled=lambda event: bool(handlers.router.fetch(event)),
                seen=seen_deliveries(), offer=intake.offer, deliveries=metrics.deliveries,
                accepted=lambda: metrics.queue_depth.set(intake.depth()))
    return Composition(settings, ctx, capabilities, handlers, intake, pool, door, trust,
                       scaleout)


def _context(settings: Settings, overrides: Overrides, clients: GitHubClients,
             metrics: Metrics, intake: DeliveryQueue, trust: SigstoreTrust,
             scaleout: ScaleOut | None) -> Context:
    """The infrastructure: timers, locks and leases shared by the replicas on Redis, this
    process's own otherwise."""
    registry = RegistryClient(
        lambda: clients.session,
        credentials=AuthFile(settings.registry_auth_file, settings.registry_credentials)
        if settings.registry_auth_file is not None else settings.registry_credentials,
        endpoints=settings.registry_endpoints, policy=overrides.registry_policy,
        on_request=lambda host, status: metrics.registry_requests.labels(
            host, str(status) if status is not None else "none").inc())
    scheduler: Scheduler
    locks: RepoLocks
    leases: Leases
    if scaleout is not None:
        scheduler, locks, leases = scaleout.scheduler, scaleout.locks, scaleout.locks
    else:
        scheduler, locks, leases = Scheduler(intake, overrides.clock), KeyedLocks(), \
            LocalLeases()
    return Context(clients=clients, metrics=metrics, scheduler=scheduler,
                   images=ImageLookup(registry), locks=locks, leases=leases,
                   clock=overrides.clock, app_id=int(settings.app_id),
                   builder=Builder(settings.kustomize, settings.helm)
                   if settings.kustomize or settings.helm else None,
                   attestations=trust)


def compose_capabilities(ctx: Context) -> Capabilities:
    """The promotion capabilities on ``ctx``, each built once and shared by those that use
    it."""
    policies, gates, status, delivery = PolicyIndex(), GateService(ctx), StatusSources(ctx), \
        DeliveryBoard()
    release_polls = ReleasePolls()
    promoter = Promoter(ctx, GateThenMerge(ctx, gates))
    dashboards = DashboardCapabilities(ctx, policies, status, gates.enforcement, delivery)
    commands = CommandCapabilities(ctx, gates, promoter, status)
    resync = ResyncCapabilities(ctx, policies, release_polls, gates, promoter, status,
                                dashboards, commands)
    return Capabilities(ctx=ctx, policies=policies, release_polls=release_polls, gates=gates,
                        promoter=promoter, status=status, delivery=delivery,
                        packages=PackagePromoter(promoter, policies), dashboards=dashboards,
                        commands=commands, resync=resync)
