"""The webhook endpoint's answer: read the body within its bound, admit it, offer it to the
queue, count the outcome. The same for the one-process server and the intake process."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from aiohttp import web
from gidgethub import sansio
from prometheus_client import Counter

from bot.runtime.queue import Job, Offered
from bot.runtime.recent import RecentKeys
from bot.serving.intake import TOO_LARGE, Answer, Delivery, admit, answer_offer

log = logging.getLogger(__name__)

WEBHOOK_PATH = "/api/github/webhooks"


@dataclass(frozen=True)
class Door:
    """What answering a delivery needs."""

    max_body_bytes: int
    secret: str
    handled: Callable[[sansio.Event], bool]
    seen: RecentKeys
    offer: Callable[[Job], Awaitable[Offered]]
    deliveries: Counter  # by event and outcome
    accepted: Callable[[], None] = lambda: None  # after a job was queued


SEEN_BYTES = 16 * 1024 * 1024  # about 130,000 of GitHub's 36-character delivery ids


def seen_deliveries() -> RecentKeys:
    """Delivery ids accepted in the last day: GitHub's redelivery of one is answered 202."""
    return RecentKeys(ttl=24 * 3600, max_bytes=SEEN_BYTES)


async def acknowledge(door: Door, request: web.Request) -> web.Response:
    """Answer GitHub within its timeout: the delivery is verified, stored in the queue and
    acknowledged (``202``); the handlers run later, in the workers."""
    limit = door.max_body_bytes
    too_long = request.content_length is not None and request.content_length > limit
    body = None if too_long else await _read_bounded(request, limit)
    if body is None or len(body) > limit:
        answer = replace(TOO_LARGE, event=request.headers.get("X-GitHub-Event") or "unknown")
    else:
        admitted = admit(request.headers, body, secret=door.secret, handled=door.handled,
                         seen=door.seen)
        answer = admitted if isinstance(admitted, Answer) else await _enqueue(door, admitted)
    door.deliveries.labels(answer.event, answer.outcome).inc()
    if answer.message is None:
        return web.Response(status=answer.status)
    return json_message(answer.status, answer.message)


async def _enqueue(door: Door, delivery: Delivery) -> Answer:
    offered = await door.offer(Job(delivery.delivery_id, delivery.event, delivery.body))
    answer = answer_offer(delivery, offered)
    if answer.warning:
        log.warning(answer.warning, extra={"delivery_id": delivery.delivery_id})
        return answer
    door.seen.add(delivery.delivery_id)
    if answer.outcome == "accepted":
        door.accepted()
    return answer


async def _read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than `limit` (the application's `client_max_size`
    is one byte more, so that aiohttp stops reading soon after)."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        return None


@functools.cache
def _message_body(message: str) -> bytes:
    """The JSON body of an answer; its messages are a handful of constants, encoded once."""
    return json.dumps({"message": message}).encode()


def json_message(status: int, message: str) -> web.Response:
    return web.Response(body=_message_body(message), status=status,
                        content_type="application/json", charset="utf-8")
