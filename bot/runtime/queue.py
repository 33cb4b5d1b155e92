"""The intake queue and the worker pool behind the webhook endpoint.

`DeliveryQueue` is the seam for other transports (the Redis stream of `bot.redisq` for several
replicas): the server only calls `offer`, the workers only call `take` and `done`. `RepoLocks`
is the seam for the per-repository lock (`ctx.locks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

from bot.metrics import Metrics
from bot.runtime.jobmemo import job_memo

log = logging.getLogger(__name__)


@dataclass
class Job:
    delivery_id: str
    event: str
    # The payload as JSON: a delivery's body exactly as it was signed (parsed by the worker,
    # not by the intake), or an internal job's payload encoded.
    body: bytes
    # The queue's own handle for the job (a durable queue's entry id); empty in memory.
    receipt: str = ""
    # 1 for the delivery itself, then one more for each retry after a transient failure; a
    # retry runs only the handlers that failed (`only`, their qualified names).
    attempt: int = 1
    only: tuple[str, ...] = ()

    @classmethod
    def of(cls, delivery_id: str, event: str, payload: dict[str, Any]) -> Job:
        """A job of a payload at hand (an internal event's)."""
        return cls(delivery_id, event, orjson.dumps(payload))

    def payload(self) -> dict[str, Any] | None:
        """The body as a JSON object; None when it is not one."""
        try:
            payload = orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return None
        return payload if isinstance(payload, dict) else None


class RetryJob(Exception):
    """Some handlers of the job failed for a transient reason: run them again later."""

    def __init__(self, handlers: tuple[str, ...]) -> None:
        super().__init__(", ".join(handlers))
        self.handlers = handlers


@dataclass(frozen=True)
class JobRetry:
    """Capped exponential backoff with jitter for jobs that failed transiently; after
    `attempts` the work is left to the resync."""

    attempts: int = 4
    base_delay: float = 2.0
    max_delay: float = 120.0

    def backoff(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


# What became of an offered job: stored; already stored under the same delivery id (by any
# replica); refused because the queue is full, or because its store cannot be reached. The
# last two are answered 503 so that GitHub records a failure and the delivery is sent again.
Offered = Literal["accepted", "duplicate", "full", "unavailable"]


class DeliveryQueue(Protocol):
    async def offer(self, job: Job) -> Offered:
        """Store the job before the delivery is acknowledged."""

    async def take(self) -> Job: ...

    async def done(self, job: Job, *, ok: bool = True) -> None:
        """The job's work is over; `ok=False` when it raised (a durable queue retries it)."""

    async def retry(self, job: Job, delay: float) -> None:
        """Offer `job` (the next attempt of one that was taken) again after `delay` seconds;
        `done` is still called for the attempt that was taken."""

    def depth(self) -> int: ...

    async def join(self) -> None: ...


class MemoryQueue:
    """A bounded in-process queue: memory stays bounded, overflow is refused, never dropped."""

    def __init__(self, maxsize: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._queue: asyncio.Queue[Job] = asyncio.Queue(maxsize=maxsize)
        self._sleep = sleep
        self._delayed: set[asyncio.Task[None]] = set()

    async def offer(self, job: Job) -> Offered:
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            return "full"
        return "accepted"

    async def put(self, job: Job) -> None:
        """Store the job once there is room (one that was accepted elsewhere already)."""
        await self._queue.put(job)

    async def take(self) -> Job:
        return await self._queue.get()

    async def done(self, job: Job, *, ok: bool = True) -> None:
        self._queue.task_done()

    async def retry(self, job: Job, delay: float) -> None:
        task = asyncio.create_task(self._later(job, delay), name="conveyor-job-retry")
        self._delayed.add(task)
        task.add_done_callback(self._delayed.discard)

    async def _later(self, job: Job, delay: float) -> None:
        await self._sleep(delay)
        if await self.offer(job) != "accepted":
            log.warning("queue full, retry dropped; the resync finishes the work",
                        extra={"delivery_id": job.delivery_id})

    def depth(self) -> int:
        """Jobs waiting for a worker, and retries waiting for their time."""
        return self._queue.qsize() + len(self._delayed)

    async def join(self) -> None:
        await self._queue.join()


class RepoLocks(Protocol):
    # Whether other processes (replicas) take the same locks: then what one process has not
    # written itself may still have been written by another.
    shared: bool

    def hold(self, key: str) -> AbstractAsyncContextManager[None]:
        """Exclusive use of `key` (a repository) until the block ends."""


class KeyedLocks:
    """One asyncio.Lock per key (a repository), dropped when nobody holds or waits for it."""

    shared = False

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        key = key.lower()
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


class IntakeFirst:
    """Deliveries go before the work they cause. While deliveries keep arriving (each less
    than `gap` seconds after the one before), a worker that took a job, and a job about to
    send a GitHub request, wait until they pause, for at most `patience` seconds each time;
    in a pause the waiting steps go one at a time, `step` seconds apart, so that a delivery
    arriving meanwhile waits behind one step, not behind all of them. A burst is answered
    first and its work runs in its pauses. Once `backlog()` jobs wait in the queue (a flood
    that would fill it), nothing waits any more: the work keeps up beside the answers."""

    def __init__(self, patience: float = 0.5, gap: float = 0.002, step: float = 0.0005,
                 backlog: Callable[[], int] = lambda: 0, most: int = 5_000) -> None:
        self.patience = patience
        self.gap = gap
        self.step = step
        self.most = most
        self._backlog = backlog
        self._last = float("-inf")
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._look: asyncio.TimerHandle | None = None

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Around the answer to one delivery."""
        loop = asyncio.get_running_loop()
        self._arrived(loop)
        try:
            yield
        finally:
            self._arrived(loop)  # an answer that waited (on Redis) ends later

    def _arrived(self, loop: asyncio.AbstractEventLoop) -> None:
        self._last = loop.time()

    async def wait(self) -> None:
        """Until deliveries pause and the steps waiting before this one went, or `patience`
        seconds passed."""
        loop = asyncio.get_running_loop()
        if (loop.time() - self._last >= self.gap and not self._waiting) \
                or self._backlog() >= self.most:
            return
        turn: asyncio.Future[None] = loop.create_future()
        self._waiting.append(turn)
        self._schedule(loop, self._last + self.gap)
        try:
            # spread: workers that took their jobs at once would otherwise run them at once
            await asyncio.wait_for(turn, self.patience * random.uniform(0.5, 1.0))
        except TimeoutError:
            pass
        finally:
            if not turn.done():
                turn.cancel()

    def _schedule(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._look is None:  # one timer at a time, not one per delivery
            self._look = loop.call_at(when, self._looked, loop)

    def _looked(self, loop: asyncio.AbstractEventLoop) -> None:
        self._look = None
        quiet_from = self._last + self.gap
        if loop.time() < quiet_from:
            self._schedule(loop, quiet_from)
            return
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                break
        if self._waiting:
            self._schedule(loop, loop.time() + self.step)


async def cancel_until_done(tasks: Iterable[asyncio.Task[Any]], every: float = 1.0) -> None:
    """Cancel the tasks, again every `every` seconds until they have ended: a cancellation
    can be lost (Python 3.11's `asyncio.timeout` turns one that lands as its deadline passes,
    inside redis-py's socket read, into the timeout, which the caller then retries)."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _done, pending = await asyncio.wait(pending, timeout=every)


class WorkerPool:
    """Runs jobs with bounded concurrency; `drain` finishes in-flight work before shutdown."""

    def __init__(
        self,
        queue: DeliveryQueue,
        handle: Callable[[Job], Awaitable[None]],
        *,
        workers: int,
        retry: JobRetry | None = None,
        metrics: Metrics | None = None,
        intake: IntakeFirst | None = None,
    ) -> None:
        self.queue = queue
        self._handle = handle
        self._retry = retry or JobRetry()
        self._metrics = metrics
        self.intake = intake or IntakeFirst(backlog=queue.depth)
        self._count = workers
        self._tasks: list[asyncio.Task[None]] = []
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._run(), name=f"conveyor-worker-{i}")
            for i in range(self._count)
        ]

    async def _run(self) -> None:
        while True:
            job = await self.queue.take()
            self._busy += 1
            self._idle.clear()
            ok = False
            try:
                await self.intake.wait()
                with job_memo():
                    await self._handle(job)
                ok = True
            except RetryJob as failed:
                await self._again(job, failed.handlers)
                ok = True
            except Exception:
                log.exception("job failed", extra={"delivery_id": job.delivery_id})
            finally:
                self._busy -= 1
                await self.queue.done(job, ok=ok)
                if self._busy == 0 and self.queue.depth() == 0:
                    self._idle.set()

    async def _again(self, job: Job, handlers: tuple[str, ...]) -> None:
        """A transient failure: the failed handlers run again later, or the resync redoes the
        work once the attempts are spent."""
        fields = {"delivery_id": job.delivery_id, "event": job.event, "attempt": job.attempt,
                  "handler": ", ".join(handlers)}
        if job.attempt >= self._retry.attempts:
            if self._metrics is not None:
                self._metrics.jobs_given_up.labels(job.event).inc()
            log.error("job given up after its retries; the resync finishes the work",
                      extra=fields)
            return
        delay = self._retry.backoff(job.attempt)
        if self._metrics is not None:
            self._metrics.job_retries.labels(job.event).inc()
        log.warning("job failed for a transient reason, retrying",
                    extra={**fields, "delay": round(delay, 2)})
        await self.queue.retry(
            Job(job.delivery_id, job.event, job.body, receipt=job.receipt,
                attempt=job.attempt + 1, only=handlers), delay)

    @property
    def idle(self) -> bool:
        """No job runs and none waits."""
        return self._busy == 0 and self.queue.depth() == 0

    async def wait_idle(self) -> None:
        """Until the queue is empty and no job runs (used by tests and the sandbox)."""
        while True:
            await self.queue.join()
            if self._busy == 0 and self.queue.depth() == 0:
                return
            await asyncio.sleep(0.005)  # a retry waiting for its time

    async def drain(self, grace_seconds: float) -> bool:
        """Stop taking new jobs once the queue is empty; True if everything finished in time."""
        try:
            await asyncio.wait_for(self.wait_idle(), grace_seconds)
            finished = True
        except TimeoutError:
            finished = False
        await cancel_until_done(self._tasks)
        self._tasks = []
        return finished
