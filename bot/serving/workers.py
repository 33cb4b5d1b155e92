"""The workers process of `python -m bot serve`: the queue, the workers, the resync, the GitHub
and registry clients; everything but the socket GitHub delivers to. Large edits and parses
run in a thread here (`bot.runtime.offload`): they delay other jobs, never an answer.

It is a fork of the intake process (`bot.serving.fork`), made before the intake's event loop
starts: it has the intake's settings, logging and secrets to redact, and imports this module
and what does the work only after the fork. It lives as long as its end of the socket pair: at
the end (the intake stopping, or gone) it finishes the work it holds, within the shutdown
grace, and exits. Signals are the intake's to take: a Ctrl-C or a SIGTERM sent to both
processes at once does not cut the work short.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import socket
import sys
from collections.abc import Callable

from aiohttp import web
from prometheus_client import generate_latest

from bot.runtime import offload
from bot.runtime.queue import Job, MemoryQueue
from bot.runtime.settings import Settings, SettingsError, check_trust_roots
from bot.serving.composition import Overrides
from bot.serving.link import (
    ANSWER,
    ASK,
    HEALTH,
    JOB,
    METRICS,
    ROUTES,
    TOOK,
    Link,
    LinkClosed,
    count,
    job_of,
    numbered,
    routing_table,
)
from bot.serving.server import Conveyor, conveyor_of, create_app
from bot.serving.tasks import background_tasks

log = logging.getLogger(__name__)

# Added to the intake's: the lowest priority there is. Where the cores are all busy, the
# intake (and whatever else runs beside it) goes first and the work runs in what is left; a
# flood that leaves nothing fills the queue, and the intake answers 503 until there is room.
WORKERS_NICENESS = 19
FROM_INTAKE = "intake"  # the receipt of a job sent by the intake, until a worker takes it


class FedQueue(MemoryQueue):
    """The workers' queue. The intake bounds what it sends by what it was told was taken, to
    `maxsize`; as much room again is the workers' own (timers, retries). A job the intake sent
    was acknowledged already: it is waited for room for, never refused."""

    def __init__(self, maxsize: int, took: Callable[[], None]) -> None:
        super().__init__(2 * maxsize)
        self._took = took
        self.received = 0

    async def feed(self, job: Job) -> None:
        job.receipt = FROM_INTAKE
        await self.put(job)
        self.received += 1

    async def take(self) -> Job:
        job = await super().take()
        if job.receipt == FROM_INTAKE:
            job.receipt = ""  # a retry of it is the workers' own
            self._took()
        return job


TOOK_EVERY = 0.005  # seconds: how often, at most, the intake is told how many jobs were taken


class TakenCount:
    """Jobs taken since the intake was last told, sent at most every `TOOK_EVERY` (each frame
    is a wake-up of the intake, on the CPU that answers GitHub)."""

    def __init__(self, link: Link) -> None:
        self._link = link
        self._taken = 0

    def took(self) -> None:
        self._taken += 1
        if self._taken == 1:
            asyncio.get_running_loop().call_later(TOOK_EVERY, self._flush)

    def _flush(self) -> None:
        if self._taken and not self._link.closing:
            self._link.send(TOOK, count(self._taken))
        self._taken = 0


async def answer_intake(link: Link, conveyor: Conveyor, queue: FedQueue) -> None:
    """Queue what the intake sends and answer its questions, until it closes its end."""
    metrics = conveyor.ctx.metrics
    while True:
        try:
            frame = await link.receive()
        except LinkClosed:
            return
        if frame.kind == JOB:
            await queue.feed(job_of(frame.content))
        elif frame.kind == ASK:
            number, what = numbered(frame.content)
            if what.decode() == HEALTH:
                answer = json.dumps({"ready": conveyor.ready, "queue_depth": queue.depth(),
                                     "received": queue.received,
                                     "sigstore": conveyor.ctx.attestations.health()}).encode()
            elif what.decode() == METRICS:
                metrics.queue_depth.set(queue.depth())
                answer = generate_latest(metrics.registry)
            else:
                answer = b""
            link.send(ANSWER, count(number), answer)
        else:
            log.warning("unknown frame from the intake process", extra={"kind": repr(frame.kind)})


async def serve_intake(settings: Settings, sock: socket.socket) -> None:
    offload.threads_only()  # no answer waits on this process's interpreter
    link = await Link.over(sock, max_body=settings.max_body_bytes)
    taken = TakenCount(link)
    queue = FedQueue(settings.queue_size, taken.took)
    app = create_app(settings, Overrides(queue=queue), background=background_tasks,
                     serve_while_starting=True)
    conveyor = conveyor_of(app)
    metrics = conveyor.ctx.metrics
    metrics.registry.unregister(metrics.deliveries)  # counted by the intake, which answers
    link.send(ROUTES, routing_table(conveyor.composed.handlers.router))
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()  # starts the pool; the first GitHub call runs meanwhile
    gc.collect()
    gc.freeze()  # as in the intake (`bot.serving.serve.freeze_startup_heap`)
    log.info("workers started", extra={"pid": os.getpid()})
    try:
        await answer_intake(link, conveyor, queue)
    finally:
        await runner.cleanup()  # the pool drains within the shutdown grace
        await link.close()


def run_workers(settings: Settings, sock: socket.socket) -> int:
    """The workers process's life, on its end of the socket pair: 0 once the intake closed
    its end and the work held is done, 2 when the roots of `CONVEYOR_SIGSTORE_TRUST` cannot be
    used (the intake reads that file without checking them)."""
    os.nice(WORKERS_NICENESS)
    if settings.sigstore_trust is not None:
        try:
            check_trust_roots(settings.sigstore_trust)
        except SettingsError as exc:
            print(f"conveyor workers: {exc}", file=sys.stderr)
            return 2
    asyncio.run(serve_intake(settings, sock))
    return 0
