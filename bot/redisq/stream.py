"""The delivery queue on a Redis Stream, shared by every replica through one consumer group.

- `offer` stores the delivery (and its dedupe mark) in one script before the endpoint answers
  202; Redis unreachable means `unavailable` and a 503, never an acknowledgement of nothing.
- `take` reads new entries with XREADGROUP, and now and then claims the entries a stopped
  replica left pending for longer than the claim timeout (XAUTOCLAIM).
- `done` acknowledges (XACK) and deletes the entry only after its work finished; entries in
  work are kept fresh (XCLAIM JUSTID) so that a slow job is not taken from a live replica.
- An entry delivered more than `max_attempts` times (it keeps killing or failing the replicas
  that take it) goes to the dead-letter stream instead of being worked on again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections import deque

import orjson
from prometheus_client import Counter, Gauge
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from bot.metrics import Metrics
from bot.redisq.client import REDIS_ERRORS, Keys, stop_requested, wait
from bot.runtime.queue import Job, Offered

log = logging.getLogger(__name__)

DEDUPE_SECONDS = 24 * 3600
DEAD_LETTERS_KEPT = 10_000

# Remember the delivery id and append the delivery, both or neither.
INTAKE = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'job', ARGV[3])
end
return false
"""


# A job's next attempt waits in a sorted set (score = due time) and its taken entry is
# acknowledged, both or neither; `DUE` moves the retries whose time has come to the stream.
RETRY = """
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('XACK', KEYS[2], ARGV[3], ARGV[4])
redis.call('XDEL', KEYS[2], ARGV[4])
return 1
"""

DUE = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 100)
for _, member in ipairs(due) do
  redis.call('ZREM', KEYS[1], member)
  local job = string.sub(member, 34)
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'job', job)
end
return #due
"""


def consumer_name() -> str:
    """Unique per process: a restarted replica is a new consumer, its old entries get claimed."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def encode(job: Job) -> str:
    """One line of JSON about the job, then its body as it is: the body is not parsed or
    escaped on the way in. The body is UTF-8 (the intake refuses any other)."""
    data: dict[str, object] = {"event": job.event}
    if job.delivery_id:
        data["id"] = job.delivery_id
    if job.attempt > 1:
        data.update(attempt=job.attempt, only=list(job.only))
    return f"{json.dumps(data, separators=(',', ':'))}\n{job.body.decode()}"


def decode(entry_id: str, fields: dict[str, str] | None) -> Job | None:
    """The job of an entry, or None when it is not one. An entry without a body line holds
    the payload inside its JSON (the format before bodies were kept as they came)."""
    try:
        head, separated, body = (fields or {})["job"].partition("\n")
        data = json.loads(head)
        event = data["event"]
        payload = data.get("payload")
        if not isinstance(event, str) or (not separated and not isinstance(payload, dict)):
            return None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    delivery_id = data.get("id") or f"internal-{entry_id}"
    attempt = data.get("attempt", 1)
    only = data.get("only") or []
    if not isinstance(attempt, int) or not isinstance(only, list):
        return None
    return Job(str(delivery_id), event, body.encode() if separated else orjson.dumps(payload),
               receipt=entry_id, attempt=attempt, only=tuple(str(name) for name in only))


class StreamMetrics:
    def __init__(self, metrics: Metrics) -> None:
        self.dead_letters = Counter(
            "conveyor_dead_letters", "Deliveries moved to the dead-letter stream",
            registry=metrics.registry)
        self.waiting = Gauge(
            "conveyor_stream_waiting", "Deliveries in the shared stream that no replica took yet",
            registry=metrics.registry)
        self.pending = Gauge(
            "conveyor_stream_pending",
            "Deliveries taken by a replica and not acknowledged yet (in work, or of a stopped "
            "replica until claimed)", registry=metrics.registry)
        self.claimed = Counter(
            "conveyor_stream_claimed", "Deliveries claimed from a replica that stopped",
            registry=metrics.registry)


class RedisQueue:
    def __init__(
        self,
        redis: Redis,
        metrics: Metrics,
        *,
        maxsize: int,
        claim_timeout: float = 30.0,
        max_attempts: int = 5,
        keys: Keys | None = None,
        consumer: str | None = None,
        block_ms: int = 1000,
        stats_interval: float = 1.0,
    ) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.consumer = consumer or consumer_name()
        self.maxsize = maxsize
        self.maxlen = max(2 * maxsize, 1000)
        self.claim_timeout = claim_timeout
        self.max_attempts = max_attempts
        self.block_ms = block_ms
        self.stats_interval = stats_interval
        self.metrics = StreamMetrics(metrics)
        self._intake = redis.register_script(INTAKE)
        self._retry = redis.register_script(RETRY)
        self._due = redis.register_script(DUE)
        self._held: dict[str, Job] = {}  # entry id → job given to a worker, not done yet
        self._claimed: deque[Job] = deque()  # claimed from a stopped replica, not taken yet
        self._backlog = 0  # stream length at the last look: waiting + pending
        self._group_ready = False
        self._next_claim = 0.0
        self._claim_cursor = "0-0"
        self._paused = asyncio.Event()
        self._settled = asyncio.Event()
        self._closed = False
        self._tasks: list[asyncio.Task[None]] = []
        self._last_warning = 0.0

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._keep_alive(), name="conveyor-stream-keepalive"),
            asyncio.create_task(self._watch(), name="conveyor-stream-stats"),
        ]

    def pause(self) -> None:
        """Take nothing new (shutdown): what is left in the stream is for the other replicas."""
        self._paused.set()

    async def close(self) -> None:
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    # -- DeliveryQueue ---------------------------------------------------------------------------
    async def offer(self, job: Job) -> Offered:
        if self._backlog >= self.maxsize:
            return "full"
        try:
            added = await self._intake(
                keys=[self.keys.seen(job.delivery_id), self.keys.stream],
                args=[DEDUPE_SECONDS, self.maxlen, encode(job)])
        except REDIS_ERRORS as exc:
            self._warn("redis unreachable, delivery refused", exc)
            return "unavailable"
        if not added:
            return "duplicate"
        self._backlog += 1
        return "accepted"

    async def writable(self) -> str | None:
        """None when Redis takes a write now (what `offer` needs), else why not. A write, not a
        PING: a full `noeviction` Redis or a read-only replica answers PING but refuses
        deliveries."""
        try:
            await wait(self.redis.set(self.keys.health(self.consumer), "1", px=60_000))
        except REDIS_ERRORS as exc:
            return f"{type(exc).__name__}: {exc}"[:200]
        return None

    async def take(self) -> Job:
        """The next job; once paused (shutdown), the worker asking for one ends. That also ends
        a worker whose cancellation redis-py swallowed when it landed as its socket timeout
        expired: the next turn of this loop sees the pause, however the cancel was lost."""
        while True:
            if self._paused.is_set():
                raise asyncio.CancelledError
            if self._claimed:
                job = self._claimed.popleft()
                self._held[job.receipt] = job
                return job
            try:
                await self._ensure_group()
                if time.monotonic() >= self._next_claim:
                    self._next_claim = time.monotonic() + max(0.1, self.claim_timeout / 2)
                    await self._claim_stale()
                    continue
                reply = await wait(self.redis.xreadgroup(
                    self.keys.group, self.consumer, {self.keys.stream: ">"}, count=1,
                    block=self.block_ms))
            except ResponseError as exc:
                if "NOGROUP" in str(exc):
                    self._group_ready = False
                    continue
                self._warn("reading the delivery stream failed", exc)
                await asyncio.sleep(0.5)
                continue
            except REDIS_ERRORS as exc:
                if stop_requested():
                    raise asyncio.CancelledError from exc
                self._warn("redis unreachable, waiting to read deliveries", exc)
                await asyncio.sleep(0.5)
                continue
            for _stream, entries in reply or []:
                for entry_id, fields in entries:
                    fresh = decode(entry_id, fields)
                    if fresh is None:
                        with contextlib.suppress(*REDIS_ERRORS):
                            await self._dead_letter(entry_id, fields, 1, "undecodable entry")
                        continue
                    self._held[entry_id] = fresh
                    return fresh

    async def done(self, job: Job, *, ok: bool = True) -> None:
        self._held.pop(job.receipt, None)
        if not self._held and not self._claimed:
            self._settled.set()
        if not ok:
            # Left pending: a replica claims it again after the claim timeout, and it goes to
            # the dead-letter stream once it has failed `max_attempts` times.
            log.warning("delivery failed, left for a retry",
                        extra={"delivery_id": job.delivery_id})
            return
        try:
            await self._acknowledge(job.receipt)
        except REDIS_ERRORS as exc:
            # Still pending: it will be claimed and done again (the work is idempotent).
            self._warn("acknowledging a delivery failed; it will be done again", exc)

    async def retry(self, job: Job, delay: float) -> None:
        """Store the next attempt in Redis, due in `delay` seconds (any replica may run it),
        and acknowledge the attempt that was taken (`job.receipt`)."""
        receipt = job.receipt
        member = f"{uuid.uuid4().hex}:{encode(job)}"  # 32 hex + ':' before the job
        try:
            await self._retry(keys=[self.keys.retries, self.keys.stream],
                              args=[time.time() + delay, member, self.keys.group, receipt])
        except REDIS_ERRORS as exc:
            # The taken entry stays pending: it is claimed again after the claim timeout.
            self._warn("a retry could not be stored; the delivery is claimed again later", exc)

    def depth(self) -> int:
        """Deliveries this replica holds and no worker runs yet (the shared backlog is in
        `conveyor_stream_waiting`)."""
        return len(self._claimed)

    async def join(self) -> None:
        """Until this replica holds no delivery (taken or claimed) that is not done."""
        while self._held or self._claimed:
            self._settled.clear()
            await self._settled.wait()

    # -- inside ----------------------------------------------------------------------------------
    async def _acknowledge(self, entry_id: str) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xack(self.keys.stream, self.keys.group, entry_id)
            pipe.xdel(self.keys.stream, entry_id)
            await pipe.execute()

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            await wait(self.redis.xgroup_create(self.keys.stream, self.keys.group, id="0",
                                                mkstream=True))
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    async def _claim_stale(self) -> None:
        """Take over the entries a stopped replica left pending longer than the timeout."""
        cursor, entries, *_deleted = await wait(self.redis.xautoclaim(
            self.keys.stream, self.keys.group, self.consumer,
            min_idle_time=int(self.claim_timeout * 1000), start_id=self._claim_cursor, count=16))
        self._claim_cursor = str(cursor)
        for entry_id, fields in entries:
            if fields is None:
                continue
            pending = await wait(self.redis.xpending_range(
                self.keys.stream, self.keys.group, min=entry_id, max=entry_id, count=1))
            attempts = int(pending[0]["times_delivered"]) if pending else 1
            job = decode(entry_id, fields)
            if job is None or attempts > self.max_attempts:
                reason = "undecodable entry" if job is None else f"failed {attempts - 1} times"
                await self._dead_letter(entry_id, fields, attempts, reason)
                continue
            self.metrics.claimed.inc()
            log.warning("claimed a delivery left pending by a stopped replica",
                        extra={"delivery_id": job.delivery_id, "event": job.event,
                               "attempt": attempts})
            self._claimed.append(job)

    async def _dead_letter(self, entry_id: str, fields: dict[str, str] | None, attempts: int,
                           reason: str) -> None:
        record = dict(fields or {})
        record.update({"entry": entry_id, "attempts": str(attempts), "reason": reason,
                       "consumer": self.consumer})
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xadd(self.keys.dead_letters, record,  # type: ignore[arg-type]
                      maxlen=DEAD_LETTERS_KEPT, approximate=True)
            pipe.xack(self.keys.stream, self.keys.group, entry_id)
            pipe.xdel(self.keys.stream, entry_id)
            await pipe.execute()
        self.metrics.dead_letters.inc()
        job = decode(entry_id, fields)
        log.error("delivery moved to the dead-letter stream",
                  extra={"delivery_id": job.delivery_id if job else entry_id,
                         "event": job.event if job else None, "attempt": attempts,
                         "error": reason})

    async def _keep_alive(self) -> None:
        """Reset the idle time of the entries in work here, so no replica claims them."""
        while not self._closed:
            await asyncio.sleep(max(0.05, self.claim_timeout / 3))
            held: list[str | bytes | int | memoryview[int]] = [
                *self._held, *(job.receipt for job in self._claimed)]
            if not held:
                continue
            try:
                await wait(self.redis.xclaim(self.keys.stream, self.keys.group, self.consumer,
                                             min_idle_time=0, message_ids=held, justid=True))
            except REDIS_ERRORS as exc:
                if stop_requested():
                    raise asyncio.CancelledError from exc
                self._warn("could not renew the entries in work", exc)

    async def _watch(self) -> None:
        """Queue gauges every `stats_interval`; consumers of long-gone replicas are removed."""
        next_cleanup = time.monotonic() + 60
        while not self._closed:
            with contextlib.suppress(*REDIS_ERRORS):
                length = int(await wait(self.redis.xlen(self.keys.stream)))
                pending = 0
                if self._group_ready:
                    summary = await wait(self.redis.xpending(self.keys.stream, self.keys.group))
                    pending = int(summary.get("pending", 0) or 0)
                self._backlog = length
                await self._due(keys=[self.keys.retries, self.keys.stream],
                                args=[time.time(), self.maxlen])
                self.metrics.waiting.set(max(0, length - pending))
                self.metrics.pending.set(pending)
                if self._group_ready and time.monotonic() >= next_cleanup:
                    next_cleanup = time.monotonic() + 60
                    await self._forget_idle_consumers()
            if stop_requested():
                raise asyncio.CancelledError
            await asyncio.sleep(self.stats_interval)

    async def _forget_idle_consumers(self) -> None:
        consumers = await wait(self.redis.xinfo_consumers(self.keys.stream, self.keys.group))
        for consumer in consumers:
            name = str(consumer.get("name"))
            if (name != self.consumer and int(consumer.get("pending", 0)) == 0
                    and int(consumer.get("idle", 0)) > 3600_000):
                await wait(self.redis.xgroup_delconsumer(self.keys.stream, self.keys.group,
                                                         name))

    def _warn(self, message: str, exc: BaseException) -> None:
        """At most one warning a second: an outage must not flood the log."""
        now = time.monotonic()
        if now - self._last_warning >= 1.0:
            self._last_warning = now
            log.warning(message, extra={"error": str(exc) or type(exc).__name__})

