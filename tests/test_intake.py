"""What the webhook answers a delivery, over plain headers and bodies (no server)."""

from __future__ import annotations

import hmac
import json
from typing import Any

import pytest
from gidgethub import sansio

from bot.cli.receive import webhook_headers
from bot.runtime.queue import Job, Offered
from bot.serving.intake import Answer, Delivery, admit, answer_offer, leading_action

SECRET = "It's a Secret to Everybody"
PAYLOAD = {"action": "published", "release": {"tag_name": "v1.4.2"}}


def handled(event: sansio.Event) -> bool:
    """Like the router: `release` for one action, `push` whatever its payload."""
    return (event.event == "release" and event.data.get("action") == "published") \
        or event.event == "push"


def admitted(event: str = "release", payload: Any = PAYLOAD, *, body: bytes | None = None,
             secret: str = SECRET, delivery_id: str = "d-1", seen: tuple[str, ...] = (),
             without: str = "") -> Answer | Delivery:
    raw = json.dumps(payload).encode() if body is None else body
    headers = webhook_headers(event, raw, secret, delivery_id)
    headers.pop(without, None)
    return admit(headers, raw, secret=SECRET, handled=handled, seen=seen)


def test_a_signed_delivery_of_a_handled_event_goes_to_the_queue_as_it_came() -> None:
    assert admitted() == Delivery("d-1", "release", json.dumps(PAYLOAD).encode())


@pytest.mark.parametrize(("body", "action"), [
    (b'{"action":"published","release":{}}', "published"),
    (b' \n\t{ "action" :\r\n"checks_requested" }', "checks_requested"),
    (b'{"release":{},"action":"published"}', None),  # not the first key
    (b'{"action":"Published"}', None),  # not one of GitHub's lower-case actions
    (b'{"action":"pub\\u006cished"}', None),  # escaped: read by the parser, not here
    (b'{"action":' + b" " * 200 + b'"published"}', None),  # beyond the first 200 bytes
    (b'[{"action":"published"}]', None),
    (b"", None),
])
def test_the_leading_action_is_read_without_parsing(body: bytes, action: str | None) -> None:
    assert leading_action(body) == action


def test_a_job_parses_its_body_when_asked() -> None:
    assert Job.of("d-1", "push", {"ref": "refs/heads/main"}).payload() == {
        "ref": "refs/heads/main"}
    assert Job("d-1", "push", b"[1, 2]").payload() is None
    assert Job("d-1", "push", b'{"action":"x", oops').payload() is None


@pytest.mark.parametrize(("case", "answer", "expected"), [
    ("no signature", admitted(without="X-Hub-Signature-256"),
     Answer(401, "missing X-Hub-Signature-256", "unsigned")),
    ("another secret", admitted(secret="guess"),
     Answer(401, "signature does not match", "bad_signature")),
    ("a signature of another body",
     admit(webhook_headers("release", b"{}", SECRET), b'{"a": 1}', secret=SECRET,
           handled=handled, seen=()),
     Answer(401, "signature does not match", "bad_signature")),
    ("a SHA-1 MAC in the SHA-256 header",
     admit({"X-Hub-Signature-256": "sha1=" + hmac.new(SECRET.encode(), b"{}", "sha1").hexdigest(),
            "X-GitHub-Event": "release", "X-GitHub-Delivery": "d-1"}, b"{}", secret=SECRET,
           handled=handled, seen=()),
     Answer(401, "signature does not match", "bad_signature")),
    ("a signature that is not ASCII (hmac.compare_digest refuses to compare it)",
     admit({"X-Hub-Signature-256": "sha256=\u00e9" * 10, "X-GitHub-Event": "release",
            "X-GitHub-Delivery": "d-1"}, b"{}", secret=SECRET, handled=handled, seen=()),
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
    ("a body without a leading action that is not JSON", admitted(body=b"{not json"),
     Answer(400, "body is not valid JSON", "malformed", "release")),
    ("a body that is not UTF-8", admitted(body=b'{"action":"published","x":"\xff"}'),
     Answer(400, "body is not valid JSON", "malformed", "release")),
    ("a JSON array", admitted(payload=[1, 2]),
     Answer(400, "body must be a JSON object", "malformed", "release")),
    ("an action no handler takes", admitted(payload={"action": "edited"}),
     Answer(204, None, "ignored", "release")),
    ("an action that is not the first key, found by parsing",
     admitted(payload={"release": {}, "action": "edited"}),
     Answer(204, None, "ignored", "release")),
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


@pytest.mark.parametrize(("case", "event", "body"), [
    ("an action that is not the first key", "release", b'{"release":{},"action":"published"}'),
    # what follows the leading action is the worker's to parse (it logs and drops a body
    # that is not JSON): only a holder of the secret can sign one
    ("a leading action, then not JSON", "release", b'{"action":"published", oops'),
    ("an event every payload of which is handled, unparsed", "push", b"[1, 2]"),
])
def test_queued_without_parsing_the_rest(case: str, event: str, body: bytes) -> None:
    assert admitted(event, body=body) == Delivery("d-1", event, body)


@pytest.mark.parametrize(("offered", "expected"), [
    ("accepted", Answer(202, "accepted", "accepted", "release")),
    ("duplicate", Answer(202, "duplicate delivery, already accepted", "duplicate", "release")),
    ("full", Answer(503, "queue full, retry later", "queue_full", "release",
                    warning="queue full, delivery refused")),
    ("unavailable", Answer(503, "delivery store unavailable, retry later", "store_unavailable",
                           "release", warning="delivery store unreachable, delivery refused")),
])
def test_answers_after_the_queue(offered: Offered, expected: Answer) -> None:
    assert answer_offer(Delivery("d-1", "release", b"{}"), offered) == expected


def test_every_documented_payload_is_routed_alike_on_its_leading_action() -> None:
    """GitHub writes `action` first: in every example payload of @octokit/webhooks-examples
    that has one, it is the first key; the intake routes each example as the router does on
    the whole payload, reading only the leading action (a `repository_dispatch` action is
    the sender's own word, hyphens and all: that body is parsed)."""
    from bot.handlers import DECLARED
    from bot.handlers.routes import Handlers, bind
    from tests.reliability.test_bad_input import load_examples

    router = Handlers(bind(DECLARED, object())).router  # bound to nothing: routing only
    read_ahead = 0
    for index, example in enumerate(load_examples()):
        event, payload = example["event"], example["payload"]
        assert "action" not in payload or next(iter(payload)) == "action", event
        body = json.dumps(payload).encode()
        action = leading_action(body)
        assert action in (None, payload.get("action")), event
        read_ahead += action is not None
        routed = bool(router.fetch(sansio.Event(payload, event=event, delivery_id="d")))
        answer = admit(webhook_headers(event, body, SECRET, f"d-{index}"), body, secret=SECRET,
                       handled=lambda e: bool(router.fetch(e)), seen=())
        assert isinstance(answer, Delivery) is (routed and event != "ping"), event
    assert read_ahead > 140
