"""What runs one job: its handlers, in their run order, each isolated from the others'
failures; those that failed for a passing reason are tried again, by their declared names."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import gidgethub
from gidgethub import sansio

from bot.github.transient import transient_failure
from bot.handlers.routes import Handlers
from bot.runtime.context import Context
from bot.runtime.logs import delivery_id_var
from bot.runtime.queue import DeliveryQueue, Job, RetryJob

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobRunner:
    handlers: Handlers
    ctx: Context
    queue: DeliveryQueue

    async def __call__(self, job: Job) -> None:
        """Run every handler of the job; one handler's failure never stops the others."""
        token = delivery_id_var.set(job.delivery_id)
        metrics = self.ctx.metrics
        started = time.monotonic()
        try:
            metrics.queue_depth.set(self.queue.depth())
            await self._run(job)
        finally:
            metrics.processing_seconds.labels(job.event).observe(time.monotonic() - started)
            delivery_id_var.reset(token)

    async def _run(self, job: Job) -> None:
        metrics = self.ctx.metrics
        payload = job.payload()
        if payload is None:  # signed, routed on its leading action, yet not a JSON object
            metrics.handler_errors.labels(job.event).inc()
            log.error("delivery body is not a JSON object, nothing done",
                      extra={"event": job.event})
            return
        event = sansio.Event(payload, event=job.event, delivery_id=job.delivery_id)
        handlers = self.handlers.to_run(event, job.only)
        installation = payload.get("installation")
        installation_id = installation.get("id") if isinstance(installation, dict) else None
        if not isinstance(installation_id, int):
            log.debug("event without an installation, nothing to do", extra={"event": job.event})
            return
        try:
            gh = await self.ctx.clients.installation(installation_id)
        except gidgethub.GitHubException as exc:
            metrics.handler_errors.labels(job.event).inc()
            log.error("no installation token", extra={"installation": installation_id,
                                                      "error": str(exc)})
            if transient_failure(exc):
                raise RetryJob(job.only) from exc
            return
        transient: list[str] = []
        for handler in handlers:
            try:
                await handler(event, gh)
            except Exception as exc:
                metrics.handler_errors.labels(job.event).inc()
                if transient_failure(exc):
                    transient.append(handler.name)
                log.exception(
                    "handler failed",
                    extra={"handler": handler.name, "event": job.event,
                           "action": payload.get("action"), "attempt": job.attempt},
                )
        if transient:
            raise RetryJob(tuple(transient))
