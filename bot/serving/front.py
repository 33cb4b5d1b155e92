"""The intake process of `python -m bot serve`: the socket GitHub delivers to, and nothing that
could keep an answer waiting.

It verifies, routes and dedupes each delivery and answers; the job goes to the workers
process (a fork of this one, `bot.serving.fork`) over a socket pair (`bot.serving.link`),
written once the answer is on its way: the jobs accepted within `HANDOFF_EVERY` in one write,
so that deliveries arriving one by one (as GitHub sends them) do not each cost a write here
and a wake-up of the workers on the same CPU, and no more than the socket takes: while the
workers lag, the jobs wait here as they came.
The answer never waits for the workers, and the workers run at the lowest CPU priority
(`bot.serving.workers`), so that where the cores are busy the answers go first and the work
runs in what is left.
The queue's bound holds across the two: the workers say how many of the jobs sent a worker
has taken, and once `CONVEYOR_QUEUE_SIZE` accepted jobs wait, deliveries are answered 503.
`/healthz` and `/metrics` ask the workers, and add what the intake knows (the jobs on their
way, the deliveries counted).
When the workers process ends on its own, the intake stops too (exit code 1, or 2 when the
workers refused the settings), so that the supervisor restarts both.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import signal
from dataclasses import dataclass

from aiohttp import web
from gidgethub import routing, sansio
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from bot import __version__
from bot.metrics import deliveries_counter
from bot.render.tool import chart_rendering_text, rendering_text
from bot.runtime.queue import Job, Offered
from bot.runtime.settings import Settings
from bot.serving.acknowledge import WEBHOOK_PATH, Door, acknowledge, json_message, seen_deliveries
from bot.serving.fork import WorkersProcess
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
    counted,
    job_content,
    numbered,
    question,
    router_of,
)

log = logging.getLogger(__name__)

ANSWER_WAIT = 5.0  # seconds the workers have to answer a /healthz or /metrics question
ROUTES_WAIT = 30.0  # seconds a delivery waits, at start, for the workers' routing table
UNAVAILABLE = "delivery store unavailable, retry later"
HANDOFF_EVERY = 0.005  # seconds: the jobs accepted meanwhile go to the workers in one write
HANDOFF_BYTES = 256 * 1024  # of bodies in one write at most (at least one job)


class Workers:
    """The intake's side of the workers process (forked by `run_server`, see
    `bot.serving.fork`): it sends it jobs, asks it questions, and notices when it ends."""

    def __init__(self, settings: Settings, process: WorkersProcess) -> None:
        self.settings = settings
        self.process = process
        self._link: Link | None = None
        self._reading: asyncio.Task[None] | None = None
        self._router: routing.Router | None = None
        self._routed = asyncio.Event()
        self._answers: dict[int, asyncio.Future[bytes]] = {}
        self._numbers = itertools.count(1)
        self._pending: collections.deque[Job] = collections.deque()  # accepted, not sent yet
        self._handing: asyncio.Task[None] | None = None
        self._accepted = asyncio.Event()
        self.sent = 0  # accepted, pending included
        self.taken = 0
        self.stopping = False
        self.ended_early = False
        self.exit_code: int | None = None  # the workers process's, once it ended on its own

    async def start(self) -> None:
        self.process.watch()
        self._link = await Link.over(self.process.sock, max_body=self.settings.max_body_bytes)
        self._reading = asyncio.create_task(self._read(self._link), name="conveyor-workers-link")
        self._handing = asyncio.create_task(self._hand_off(self._link),
                                            name="conveyor-workers-handoff")
        log.info("workers process started", extra={"pid": self.process.pid})

    async def _read(self, link: Link) -> None:
        try:
            while True:
                frame = await link.receive()
                if frame.kind == ANSWER:
                    number, answer = numbered(frame.content)
                    waiting = self._answers.pop(number, None)
                    if waiting is not None and not waiting.done():
                        waiting.set_result(answer)
                elif frame.kind == TOOK:
                    self.taken += counted(frame.content)
                elif frame.kind == ROUTES:
                    self._router = router_of(frame.content)
                    self._routed.set()
                else:
                    log.warning("unknown frame from the workers process",
                                extra={"kind": repr(frame.kind)})
        except LinkClosed:
            pass
        finally:
            self._routed.set()  # no routes will come: deliveries waiting for them are refused
        if not self.stopping:
            await self._ended()

    async def _hand_off(self, link: Link) -> None:
        """Write the accepted jobs to the workers: those of `HANDOFF_EVERY` in one write, and
        the next write once the socket took the last. While the workers lag (they run at the
        lowest priority, on the CPU that answers), the jobs wait here as they came: written
        ahead into the transport, they were copied into one growing buffer, which the intake
        then moved about in memory (~70 µs of CPU per delivery at 3,000 a second)."""
        try:
            while True:
                await self._accepted.wait()
                await asyncio.sleep(HANDOFF_EVERY)
                self._accepted.clear()
                while self._pending and not link.closing:
                    link.send_each(JOB, [job_content(job) for job in self._batch()])
                    await link.drain()
        except ConnectionError:
            pass  # the workers are gone: `_read` sees the link closed and stops the intake

    def _batch(self) -> list[Job]:
        jobs = [self._pending.popleft()]
        size = len(jobs[0].body)
        while self._pending and size + len(self._pending[0].body) <= HANDOFF_BYTES:
            jobs.append(self._pending.popleft())
            size += len(jobs[-1].body)
        return jobs

    async def _ended(self) -> None:
        """The workers process ended without being asked to: stop, so that both restart."""
        self.ended_early = True
        code = None
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(self.process.wait(), ANSWER_WAIT)
        self.exit_code = code
        log.error("the workers process ended; stopping", extra={"exit_code": code})
        signal.raise_signal(signal.SIGTERM)

    async def handling(self) -> bool:
        """Whether the routing table is here (waiting for it at start); False once the
        workers are gone."""
        if not self._routed.is_set():
            try:
                await asyncio.wait_for(self._routed.wait(), ROUTES_WAIT)
            except TimeoutError:
                return False
        return self._router is not None and not self.gone

    def handles(self, event: sansio.Event) -> bool:
        return self._router is not None and bool(self._router.fetch(event))

    @property
    def gone(self) -> bool:
        return self._link is None or self._link.closing or self.stopping

    @property
    def waiting(self) -> int:
        """Jobs accepted that no worker has taken yet (some maybe not written yet)."""
        return self.sent - self.taken

    async def offer(self, job: Job) -> Offered:
        if self.gone or self._link is None:
            return "unavailable"
        if self.waiting >= self.settings.queue_size:
            return "full"
        self._pending.append(job)
        self._accepted.set()
        self.sent += 1
        return "accepted"

    async def ask(self, what: str) -> bytes | None:
        """The workers' answer, or None when they do not answer in time or are gone."""
        if self.gone or self._link is None:
            return None
        number = next(self._numbers)
        answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._answers[number] = answer
        self._link.send(ASK, *question(number, what))
        try:
            return await asyncio.wait_for(answer, ANSWER_WAIT)
        except TimeoutError:
            return None
        finally:
            self._answers.pop(number, None)

    async def stop(self) -> None:
        """Close the link and wait for the workers to finish what they hold."""
        self.stopping = True
        if self._handing is not None:
            self._handing.cancel()
            await asyncio.gather(self._handing, return_exceptions=True)
        if self._link is not None:
            if self._pending and not self._link.closing:
                self._link.send_each(JOB, [job_content(job) for job in self._pending])
                self._pending.clear()
            await self._link.close()
        if self.process.returncode is None:
            try:
                await asyncio.wait_for(self.process.wait(), self.settings.shutdown_grace + 5)
            except TimeoutError:
                log.warning("the workers process did not stop in time; killed")
                self.process.kill()
                await self.process.wait()
        if self._reading is not None:
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)
        for waiting in self._answers.values():
            waiting.cancel()


@dataclass(frozen=True)
class Front:
    workers: Workers
    door: Door
    registry: CollectorRegistry


_FRONT: web.AppKey[Front] = web.AppKey("conveyor_front")


def create_intake_app(settings: Settings, process: WorkersProcess) -> web.Application:
    workers = Workers(settings, process)
    registry = CollectorRegistry()
    door = Door(settings.max_body_bytes, settings.webhook_secret, handled=workers.handles,
                seen=seen_deliveries(), offer=workers.offer,
                deliveries=deliveries_counter(registry))
    app = web.Application(client_max_size=settings.max_body_bytes + 1)
    app[_FRONT] = Front(workers, door, registry)
    app.router.add_post(WEBHOOK_PATH, webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)

    async def start(_app: web.Application) -> None:
        await workers.start()

    async def stop(_app: web.Application) -> None:  # after the answers in flight were sent
        await workers.stop()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


def workers_of(app: web.Application) -> Workers:
    return app[_FRONT].workers


async def webhook(request: web.Request) -> web.Response:
    front = request.app[_FRONT]
    if not await front.workers.handling():
        event = request.headers.get("X-GitHub-Event") or "unknown"
        front.door.deliveries.labels(event, "store_unavailable").inc()
        return json_message(503, UNAVAILABLE)
    return await acknowledge(front.door, request)


async def healthz(request: web.Request) -> web.Response:
    """As the one-process server's: 200 once the workers have started; 503 while they start,
    and while they do not answer."""
    workers = request.app[_FRONT].workers
    answer = await workers.ask(HEALTH)
    if answer is None:
        status = "workers stopped" if workers.gone else "workers not answering"
        return web.json_response({"status": status, "version": __version__,
                                  "queue_depth": workers.waiting}, status=503)
    state = json.loads(answer)
    on_the_way = workers.sent - int(state["received"])
    body = {"status": "ok" if state["ready"] else "starting", "version": __version__,
            "queue_depth": int(state["queue_depth"]) + on_the_way,
            "rendering": rendering_text(workers.settings.kustomize),
            "chart_rendering": chart_rendering_text(workers.settings.helm),
            "sigstore": state.get("sigstore")}
    return web.json_response(body, status=200 if state["ready"] else 503)


async def metrics_endpoint(request: web.Request) -> web.Response:
    front = request.app[_FRONT]
    own = generate_latest(front.registry)
    theirs = await front.workers.ask(METRICS)
    return web.Response(body=(theirs or b"") + own, status=200 if theirs is not None else 503,
                        headers={"Content-Type": CONTENT_TYPE_LATEST})
