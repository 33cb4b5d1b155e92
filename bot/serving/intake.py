"""What the webhook answers a delivery, as pure functions over its headers and body.

The signature is verified before anything of the body is read; a delivery that passes every
check becomes a :class:`Delivery` for the queue, and :func:`answer_offer` says what to answer
once the queue took it or not. Every answer names the outcome the delivery metric counts.

The body is parsed by the worker, not here: GitHub writes a payload's `action` as its first
key, and that and the event name are all the routing needs. Only a body that does not start
with one, for an event whose handlers all take certain actions, is parsed to route it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import gidgethub
import orjson
from gidgethub import sansio

from bot.runtime.queue import Offered
from bot.runtime.scheduler import INTERNAL_PREFIX

__all__ = ["TOO_LARGE", "Answer", "Delivery", "Outcome", "admit", "answer_offer"]

MAX_HEADER_LENGTH = 100  # of X-GitHub-Event and X-GitHub-Delivery
# `{"action":"created", ...`: JSON allows white space around the tokens; GitHub's actions
# are lower-case words joined by underscores, so the value needs no unescaping.
LEADING_ACTION = re.compile(rb'\s*\{\s*"action"\s*:\s*"([a-z_]{1,64})"')
ACTION_WITHIN = 200  # bytes of the body the leading action is looked for in

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
    body: bytes  # valid UTF-8; parsed by the worker


TOO_LARGE = Answer(413, "payload too large", "too_large")


def admit(headers: Mapping[str, str], body: bytes, *, secret: str,
          handled: Callable[[sansio.Event], bool], seen: Container[str]) -> Answer | Delivery:
    """The answer to a delivery the queue need not see, or the delivery to offer it.

    In order: the signature is missing (401) or does not match (401); the event or delivery
    id header is missing or too long (400); the body is not UTF-8, or it had to be parsed and
    is not a JSON object (400); a ``ping`` (200); an internal or unhandled event (204); a
    delivery id in ``seen`` (202).
    """
    signature = headers.get("X-Hub-Signature-256", "")
    if not signature:
        return Answer(401, "missing X-Hub-Signature-256", "unsigned")
    try:
        # gidgethub also takes "sha1=": in the SHA-256 header it would let a SHA-1 MAC pass;
        # and it compares as strings, which hmac.compare_digest refuses beyond ASCII
        if not signature.startswith("sha256=") or not signature.isascii():
            raise gidgethub.ValidationFailure("not a SHA-256 signature")
        sansio.validate_event(body, signature=signature, secret=secret)
    except gidgethub.ValidationFailure:
        return Answer(401, "signature does not match", "bad_signature")
    event_name = headers.get("X-GitHub-Event", "")
    delivery_id = headers.get("X-GitHub-Delivery", "")
    if not event_name or not delivery_id or len(delivery_id) > MAX_HEADER_LENGTH \
            or len(event_name) > MAX_HEADER_LENGTH:
        return Answer(400, "missing X-GitHub-Event or X-GitHub-Delivery", "bad_headers")
    try:
        body.decode()
    except UnicodeDecodeError:  # RFC 8259: JSON exchanged between systems is UTF-8
        return Answer(400, "body is not valid JSON", "malformed", event_name)
    if event_name == "ping":
        return Answer(200, "pong", "pong", event_name)
    routed = not event_name.startswith(INTERNAL_PREFIX) and _handled(
        event_name, delivery_id, body, handled)
    if isinstance(routed, Answer):
        return routed
    if not routed:
        return Answer(204, None, "ignored", event_name)
    if delivery_id in seen:
        return _duplicate(event_name)
    return Delivery(delivery_id, event_name, body)


def leading_action(body: bytes) -> str | None:
    """The payload's `action` when it is the first key of the body."""
    found = LEADING_ACTION.match(body, 0, ACTION_WITHIN)
    return found.group(1).decode() if found else None


def _handled(event_name: str, delivery_id: str, body: bytes,
             handled: Callable[[sansio.Event], bool]) -> bool | Answer:
    """Whether a handler takes the event, judged by its name and action; the body is parsed
    only when it has no leading action and no handler takes every action of the event."""
    action = leading_action(body)
    probe: dict[str, Any] = {} if action is None else {"action": action}
    if handled(sansio.Event(probe, event=event_name, delivery_id=delivery_id)):
        return True
    if action is not None:
        return False
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:  # also NaN, lone surrogates: not RFC 8259
        return Answer(400, "body is not valid JSON", "malformed", event_name)
    if not isinstance(payload, dict):
        return Answer(400, "body must be a JSON object", "malformed", event_name)
    return handled(sansio.Event(payload, event=event_name, delivery_id=delivery_id))


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
