"""What the webhook answers a delivery, as pure functions over its headers and body.

The signature is verified before anything of the body is parsed; a delivery that passes every
check becomes a :class:`Delivery` for the queue, and :func:`answer_offer` says what to answer
once the queue took it or not. Every answer names the outcome the delivery metric counts.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import gidgethub
import orjson
from gidgethub import sansio

from .queue import Offered
from .scheduler import INTERNAL_PREFIX

__all__ = ["TOO_LARGE", "Answer", "Delivery", "Outcome", "admit", "answer_offer"]

MAX_HEADER_LENGTH = 100  # of X-GitHub-Event and X-GitHub-Delivery

Outcome = Literal["too_large", "unsigned", "bad_signature", "bad_headers", "malformed", "pong",
                  "ignored", "duplicate", "queue_full", "store_unavailable", "accepted"]


@dataclass(frozen=True)
class Answer:
    status: int
    message: str | None  # None: an empty response
    outcome: Outcome
    event: str = "unknown"  # the event the metric counts it under: unknown until trusted
    warning: str | None = None  # what the log says when the delivery is refused for now


@dataclass(frozen=True)
class Delivery:
    """A signed, well-formed delivery of an event some handler takes."""

    delivery_id: str
    event: str
    payload: dict[str, Any]


TOO_LARGE = Answer(413, "payload too large", "too_large")


def admit(headers: Mapping[str, str], body: bytes, *, secret: str,
          handled: Callable[[sansio.Event], bool], seen: Container[str]) -> Answer | Delivery:
    """The answer to a delivery the queue need not see, or the delivery to offer it.

    In order: the signature is missing (401) or does not match (401); the event or delivery
    id header is missing or too long (400); the body is not a JSON object (400); a ``ping``
    (200); an internal or unhandled event (204); a delivery id in ``seen`` (202).
    """
    signature = headers.get("X-Hub-Signature-256", "")
    if not signature:
        return Answer(401, "missing X-Hub-Signature-256", "unsigned")
    try:
        sansio.validate_event(body, signature=signature, secret=secret)
    except gidgethub.ValidationFailure:
        return Answer(401, "signature does not match", "bad_signature")
    event_name = headers.get("X-GitHub-Event", "")
    delivery_id = headers.get("X-GitHub-Delivery", "")
    if not event_name or not delivery_id or len(delivery_id) > MAX_HEADER_LENGTH \
            or len(event_name) > MAX_HEADER_LENGTH:
        return Answer(400, "missing X-GitHub-Event or X-GitHub-Delivery", "bad_headers")
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:  # also invalid UTF-8, NaN, lone surrogates: not RFC 8259
        return Answer(400, "body is not valid JSON", "malformed", event_name)
    if not isinstance(payload, dict):
        return Answer(400, "body must be a JSON object", "malformed", event_name)
    if event_name == "ping":
        return Answer(200, "pong", "pong", event_name)
    if event_name.startswith(INTERNAL_PREFIX) or not handled(
            sansio.Event(payload, event=event_name, delivery_id=delivery_id)):
        return Answer(204, None, "ignored", event_name)
    if delivery_id in seen:
        return _duplicate(event_name)
    return Delivery(delivery_id, event_name, payload)


def answer_offer(delivery: Delivery, offered: Offered) -> Answer:
    """The answer once the queue was offered ``delivery``: refused for now (503, GitHub
    delivers it again later), or accepted, possibly before (202)."""
    event = delivery.event
    if offered == "full":
        return Answer(503, "queue full, retry later", "queue_full", event,
                      warning="queue full, delivery refused")
    if offered == "unavailable":
        return Answer(503, "delivery store unavailable, retry later", "store_unavailable",
                      event, warning="delivery store unreachable, delivery refused")
    if offered == "duplicate":
        return _duplicate(event)
    return Answer(202, "accepted", "accepted", event)


def _duplicate(event: str) -> Answer:
    return Answer(202, "duplicate delivery, already accepted", "duplicate", event)
