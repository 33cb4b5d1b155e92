"""What the webhook answers a delivery, over plain headers and bodies (no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gidgethub import sansio

from bot.intake import Answer, Delivery, admit, answer_offer
from bot.queue import Offered
from bot.receive import webhook_headers

SECRET = "It's a Secret to Everybody"
PAYLOAD = {"action": "published", "release": {"tag_name": "v1.4.2"}}


def handled(event: sansio.Event) -> bool:
    return event.event == "release"


def admitted(event: str = "release", payload: Any = PAYLOAD, *, body: bytes | None = None,
             secret: str = SECRET, delivery_id: str = "d-1", seen: tuple[str, ...] = (),
             without: str = "") -> Answer | Delivery:
    raw = json.dumps(payload).encode() if body is None else body
    headers = webhook_headers(event, raw, secret, delivery_id)
    headers.pop(without, None)
    return admit(headers, raw, secret=SECRET, handled=handled, seen=seen)


def test_a_signed_delivery_of_a_handled_event_goes_to_the_queue() -> None:
    assert admitted() == Delivery("d-1", "release", PAYLOAD)


@pytest.mark.parametrize(("case", "answer", "expected"), [
    ("no signature", admitted(without="X-Hub-Signature-256"),
     Answer(401, "missing X-Hub-Signature-256", "unsigned")),
    ("another secret", admitted(secret="guess"),
     Answer(401, "signature does not match", "bad_signature")),
    ("a signature of another body",
     admit(webhook_headers("release", b"{}", SECRET), b'{"a": 1}', secret=SECRET,
           handled=handled, seen=()),
     Answer(401, "signature does not match", "bad_signature")),
    ("the signature is checked before the headers",
     admitted(secret="guess", without="X-GitHub-Event"),
     Answer(401, "signature does not match", "bad_signature")),
    ("no event header", admitted(without="X-GitHub-Event"),
     Answer(400, "missing X-GitHub-Event or X-GitHub-Delivery", "bad_headers")),
    ("no delivery id", admitted(without="X-GitHub-Delivery"),
     Answer(400, "missing X-GitHub-Event or X-GitHub-Delivery", "bad_headers")),
    ("a delivery id over 100 characters", admitted(delivery_id="d" * 101),
     Answer(400, "missing X-GitHub-Event or X-GitHub-Delivery", "bad_headers")),
    ("an event name over 100 characters", admitted(event="e" * 101),
     Answer(400, "missing X-GitHub-Event or X-GitHub-Delivery", "bad_headers")),
    ("a body that is not JSON", admitted(body=b"{not json"),
     Answer(400, "body is not valid JSON", "malformed", "release")),
    ("a body that is not UTF-8", admitted(body=b'"\xff"'),
     Answer(400, "body is not valid JSON", "malformed", "release")),
    ("a JSON array", admitted(payload=[1, 2]),
     Answer(400, "body must be a JSON object", "malformed", "release")),
    ("a ping", admitted(event="ping", payload={"zen": "Keep it logically awesome."}),
     Answer(200, "pong", "pong", "ping")),
    ("an event no handler takes", admitted(event="star"),
     Answer(204, None, "ignored", "star")),
    ("an internal event from outside", admitted(event="conveyor.recheck"),
     Answer(204, None, "ignored", "conveyor.recheck")),
    ("a delivery accepted before", admitted(seen=("d-1",)),
     Answer(202, "duplicate delivery, already accepted", "duplicate", "release")),
])
def test_answers_before_the_queue(case: str, answer: Answer | Delivery,
                                  expected: Answer) -> None:
    assert answer == expected


@pytest.mark.parametrize(("offered", "expected"), [
    ("accepted", Answer(202, "accepted", "accepted", "release")),
    ("duplicate", Answer(202, "duplicate delivery, already accepted", "duplicate", "release")),
    ("full", Answer(503, "queue full, retry later", "queue_full", "release",
                    warning="queue full, delivery refused")),
    ("unavailable", Answer(503, "delivery store unavailable, retry later", "store_unavailable",
                           "release", warning="delivery store unreachable, delivery refused")),
])
def test_answers_after_the_queue(offered: Offered, expected: Answer) -> None:
    assert answer_offer(Delivery("d-1", "release", PAYLOAD), offered) == expected
