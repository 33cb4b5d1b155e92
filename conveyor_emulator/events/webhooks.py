"""Signed webhook deliveries to the bot, in order, from a background worker."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import aiohttp

from conveyor_emulator.store.state import JSON
from conveyor_emulator.store.world import World

DELIVERY_TIMEOUT = 10.0

# Acting helpers collect the deliveries their calls trigger, so they can await them.
_collector: contextvars.ContextVar[list[asyncio.Future[Delivery]] | None] = (
    contextvars.ContextVar("emulator_delivery_collector", default=None)
)


@dataclass
class Delivery:
    id: int
    guid: str
    event: str
    action: str | None
    payload: JSON
    installation_id: int | None
    repository_id: int | None
    redelivery: bool
    delivered_at: datetime
    status_code: int = 0
    duration: float = 0.0
    response_body: str = ""
    request_headers: dict[str, str] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if self.status_code == 0:
            return "No webhook URL" if not self.request_headers else "Connection failed"
        if 200 <= self.status_code < 300:
            return "OK"
        return f"Invalid HTTP Response: {self.status_code}"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Webhooks:
    def __init__(self, world: World, *, secret: str, url: str | None,
                 validate: Callable[[str, JSON], list[str]] | None = None) -> None:
        self.world = world
        self.secret = secret
        self.url = url
        self.validate = validate
        self.violations: list[str] = []
        self.deliveries: list[Delivery] = []
        self.hook_id = 100_000 + world.app_id
        self._queue: asyncio.Queue[tuple[Delivery, asyncio.Future[Delivery]]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._in_flight = 0
        self._idle: asyncio.Event | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._idle = asyncio.Event()
        self._idle.set()
        self._session = aiohttp.ClientSession()
        self._worker = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def settle(self) -> None:
        """Wait until every queued delivery has been answered (including ones it triggers)."""
        while self._idle is not None and not self._idle.is_set():
            await self._idle.wait()
            await asyncio.sleep(0)

    @property
    def pending(self) -> int:
        return self._in_flight

    # -- emitting --------------------------------------------------------------------------------
    def emit(self, event: str, payload: JSON, *, installation_id: int | None,
             repository_id: int | None) -> asyncio.Future[Delivery]:
        """Queue a delivery; the returned future resolves once the bot has answered."""
        delivery = self._record(event, payload, installation_id, repository_id, redelivery=False)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Delivery] = loop.create_future()
        collector = _collector.get()
        if collector is not None:
            collector.append(future)
        if self._queue is None:
            future.set_result(delivery)
            return future
        assert self._idle is not None
        self._in_flight += 1
        self._idle.clear()
        self._queue.put_nowait((delivery, future))
        return future

    def _record(self, event: str, payload: JSON, installation_id: int | None,
                repository_id: int | None, *, redelivery: bool) -> Delivery:
        if self.validate is not None:
            self.violations.extend(self.validate(event, payload))
        delivery = Delivery(
            id=self.world.next_id(),
            guid=str(uuid.UUID(int=self.world.rng.getrandbits(128), version=4)),
            event=event,
            action=payload.get("action") if isinstance(payload.get("action"), str) else None,
            payload=payload,
            installation_id=installation_id,
            repository_id=repository_id,
            redelivery=redelivery,
            delivered_at=self.world.now(),
        )
        self.deliveries.append(delivery)
        return delivery

    async def send_now(self, event: str, payload: JSON, *, installation_id: int | None = None,
                       repository_id: int | None = None) -> Delivery:
        delivery = self._record(event, payload, installation_id, repository_id, redelivery=False)
        await self._post(delivery)
        return delivery

    def _redelivery_of(self, delivery_id: int) -> Delivery:
        """A recorded copy of delivery `delivery_id` (same guid), marked as a redelivery."""
        original = next((d for d in self.deliveries if d.id == delivery_id), None)
        if original is None:
            raise KeyError(delivery_id)
        copy = Delivery(
            id=self.world.next_id(), guid=original.guid, event=original.event,
            action=original.action, payload=original.payload,
            installation_id=original.installation_id, repository_id=original.repository_id,
            redelivery=True, delivered_at=self.world.now(),
        )
        self.deliveries.append(copy)
        return copy

    async def redeliver(self, delivery_id: int) -> Delivery:
        copy = self._redelivery_of(delivery_id)
        await self._post(copy)
        return copy

    def redeliver_later(self, delivery_id: int) -> Delivery:
        """Queue a redelivery (used by the REST endpoint, which must not wait for the bot)."""
        copy = self._redelivery_of(delivery_id)
        if self._queue is not None and self._idle is not None:
            loop = asyncio.get_running_loop()
            self._in_flight += 1
            self._idle.clear()
            self._queue.put_nowait((copy, loop.create_future()))
        return copy

    # -- sending ---------------------------------------------------------------------------------
    async def _run(self) -> None:
        assert self._queue is not None and self._idle is not None
        while True:
            delivery, future = await self._queue.get()
            try:
                await self._post(delivery)
            finally:
                if not future.done():
                    future.set_result(delivery)
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle.set()

    def headers_for(self, delivery: Delivery, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/emulator",
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Delivery": delivery.guid,
            "X-GitHub-Hook-ID": str(self.hook_id),
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.world.app_id),
            "X-Hub-Signature-256": sign(self.secret, body),
        }
        headers["X-Hub-Signature"] = "sha1=" + hmac.new(
            self.secret.encode(), body, hashlib.sha1).hexdigest()
        return headers

    async def _post(self, delivery: Delivery) -> None:
        if not self.url:
            return
        body = json.dumps(delivery.payload, separators=(",", ":")).encode()
        headers = self.headers_for(delivery, body)
        delivery.request_headers = headers
        session = self._session
        own = session is None
        if session is None:
            session = aiohttp.ClientSession()
        started = time.monotonic()
        try:
            timeout = aiohttp.ClientTimeout(total=DELIVERY_TIMEOUT)
            async with session.post(self.url, data=body, headers=headers,
                                    timeout=timeout) as resp:
                delivery.status_code = resp.status
                delivery.response_body = (await resp.text())[:4096]
                delivery.response_headers = dict(resp.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            delivery.status_code = 0
            delivery.response_body = f"{type(exc).__name__}: {exc}"
        finally:
            delivery.duration = time.monotonic() - started
            if own:
                await session.close()


class collect:
    """`with collect() as futures:` gathers the deliveries triggered inside the block."""

    def __init__(self) -> None:
        self.futures: list[asyncio.Future[Delivery]] = []
        self._token: contextvars.Token[list[asyncio.Future[Delivery]] | None] | None = None

    def __enter__(self) -> list[asyncio.Future[Delivery]]:
        self._token = _collector.set(self.futures)
        return self.futures

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _collector.reset(self._token)
