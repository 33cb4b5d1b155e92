"""Bad input never reaches a worker unsigned, never makes a 5xx, never crashes the server:
every example payload GitHub documents, fuzzed headers and bodies, broken policies and
manifests."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.sandbox.demo import DEPLOY_REPO
from tests.harness import SECRET, World, close_world
from tests.reliability.support import build_world, metric_samples, post_signed, signed_headers

EXAMPLES = Path(__file__).parent / "data" / "octokit-webhook-examples.json.gz"


def load_examples() -> list[dict[str, Any]]:
    data = json.loads(gzip.decompress(EXAMPLES.read_bytes()))
    examples: list[dict[str, Any]] = data["examples"]
    return examples


async def metrics_text(session: aiohttp.ClientSession, world: World) -> str:
    async with session.get(world.webhook_url.replace("/api/github/webhooks", "/metrics")) as r:
        return await r.text()


async def test_every_documented_example_payload_gets_2xx_or_4xx(rworld: World) -> None:
    world = rworld
    examples = load_examples()
    assert len(examples) > 150
    statuses: dict[str, int] = {}
    async with aiohttp.ClientSession() as session:
        # Sent to our installation, so that the handlers really run on each example's shapes
        # against the emulator: no handler may fail on any of them.
        for index, example in enumerate(examples):
            event, payload = example["event"], dict(example["payload"])
            if isinstance(payload.get("installation"), dict):
                payload["installation"] = {**payload["installation"],
                                           "id": world.demo.installation_id}
            statuses[f"{event}.{payload.get('action')}"] = await post_signed(
                session, world.webhook_url, event, payload, f"example-ours-{index}")
        await world.conveyor.pool.wait_idle()
        await world.settle()
        errors = metric_samples(await metrics_text(session, world),
                                "conveyor_handler_errors_total")
        assert not errors, errors
        # As sent: installations the emulator does not know (no token: logged, not crashed).
        for index, example in enumerate(examples):
            event, payload = example["event"], example["payload"]
            status = await post_signed(session, world.webhook_url, event, payload,
                                       f"example-{index}")
            key = f"{event}.{payload.get('action')}"
            statuses[key] = max(statuses[key], status)
        await world.conveyor.pool.wait_idle()
        async with session.get(world.webhook_url.replace("/api/github/webhooks",
                                                         "/healthz")) as response:
            assert response.status == 200
    server_errors = {name: status for name, status in statuses.items() if status >= 500}
    assert not server_errors, server_errors
    assert all(200 <= s < 500 for s in statuses.values())
    assert statuses["ping.None"] == 200
    assert sum(1 for s in statuses.values() if s == 202) > 20  # many were really processed


# -- fuzz ----------------------------------------------------------------------------------------

class ServerThread:
    """The world on its own event loop, so that hypothesis can drive it synchronously."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.world: World = self.run(build_world(max_body_bytes=64 * 1024))
        self.session: aiohttp.ClientSession = self.run(self._session())

    @staticmethod
    async def _session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def close(self) -> None:
        self.run(self.session.close())
        self.run(close_world(self.world))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    running = ServerThread()
    try:
        yield running
    finally:
        running.close()


EVENTS = st.sampled_from(["push", "release", "pull_request", "issue_comment", "registry_package",
                          "package", "installation", "ping", "check_run", "status", "zen"])
HEADER_TEXT = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=40)
JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=12), inner, max_size=4), max_leaves=12)
KEYS = st.sampled_from(["action", "installation", "repository", "sender", "release", "comment",
                        "issue", "pull_request", "ref", "commits", "package", "registry_package"])


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["shaped", "json", "truncated", "bytes", "unicode"]))
    if kind == "shaped":
        # The keys handlers read, with values of any type; `installation` often missing.
        payload = draw(st.dictionaries(KEYS, JSON_VALUE, max_size=6))
        if draw(st.booleans()):
            payload["installation"] = {"id": draw(st.integers(1, 10))}
        return json.dumps(payload).encode()
    if kind == "json":
        return json.dumps(draw(JSON_VALUE)).encode()
    if kind == "truncated":
        text = json.dumps({"action": "published", "release": {"tag_name": "v1.0.0"},
                           "installation": {"id": 1}})
        return text[: draw(st.integers(0, len(text) - 1))].encode()
    if kind == "unicode":
        return json.dumps({"action": draw(st.text()), "ref": draw(st.text())},
                          ensure_ascii=False).encode()
    return draw(st.binary(max_size=300))


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[dict[str, str], bytes, str]:
    body = draw(bodies())
    headers = {"Content-Type": draw(st.sampled_from(["application/json", "text/plain", ""]))}
    if draw(st.integers(0, 5)):
        headers["X-GitHub-Event"] = draw(EVENTS | HEADER_TEXT)
    if draw(st.integers(0, 5)):
        headers["X-GitHub-Delivery"] = draw(st.uuids().map(str) | HEADER_TEXT)
    mode = draw(st.sampled_from(["missing", "garbage", "other-secret", "sha1", "tampered",
                                 "signed"]))
    good = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    if mode == "garbage":
        headers["X-Hub-Signature-256"] = draw(HEADER_TEXT)
    elif mode == "other-secret":
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(
            b"not-the-secret", body, hashlib.sha256).hexdigest()
    elif mode == "sha1":
        headers["X-Hub-Signature"] = "sha1=" + hmac.new(SECRET.encode(), body,
                                                        hashlib.sha1).hexdigest()
    elif mode == "tampered":
        headers["X-Hub-Signature-256"] = good
        body = body + b" "
    elif mode == "signed":
        headers["X-Hub-Signature-256"] = good
    return headers, body, mode


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(delivery=deliveries())
def test_fuzzed_deliveries_never_5xx_and_unsigned_ones_do_nothing(
    server: ServerThread, delivery: tuple[dict[str, str], bytes, str],
) -> None:
    headers, body, mode = delivery
    world = server.world

    async def send() -> tuple[int, int, float]:
        await world.conveyor.pool.wait_idle()
        before = len(world.emulator.requests.entries)
        accepted_before = _accepted(world)
        async with server.session.post(world.webhook_url, data=body,
                                       headers=headers) as response:
            await response.read()
            status = response.status
        await world.conveyor.pool.wait_idle()
        accepted = _accepted(world) - accepted_before
        return status, len(world.emulator.requests.entries) - before, accepted

    status, requests, accepted = server.run(send())
    assert status < 500
    if mode != "signed":
        assert status == 401
        assert requests == 0, "an unsigned delivery caused GitHub requests"
        assert accepted == 0
    else:
        assert status in (200, 202, 204, 400), status


def _accepted(world: World) -> float:
    return sum(sample.value for family in world.conveyor.ctx.metrics.deliveries.collect()
               for sample in family.samples
               if sample.name == "conveyor_deliveries_total"
               and sample.labels.get("outcome") == "accepted")


async def test_bodies_above_the_limit_get_413_before_anything_else() -> None:
    world = await build_world(max_body_bytes=64 * 1024)
    try:
        at_start = len(world.emulator.requests.entries)  # the app's identity, read at start-up
        body = b"{" + b" " * (64 * 1024) + b"}"
        async with aiohttp.ClientSession() as session:
            # declared length, no signature at all: 413 (the size is checked first, unread)
            async with session.post(world.webhook_url, data=body,
                                    headers={"X-GitHub-Event": "push"}) as response:
                assert response.status == 413
            # chunked, no length declared, validly signed: still 413
            digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()

            async def chunks() -> Any:
                for start in range(0, len(body), 8192):
                    yield body[start:start + 8192]

            async with session.post(world.webhook_url, data=chunks(), headers={
                    "X-GitHub-Event": "push", "X-GitHub-Delivery": "big",
                    "X-Hub-Signature-256": f"sha256={digest}"}) as response:
                assert response.status == 413
            # just under the limit: processed normally
            status = await post_signed(session, world.webhook_url, "ping",
                                       {"zen": "y" * (64 * 1024 - 100)}, "small")
            assert status == 200
        assert len(world.emulator.requests.entries) == at_start
    finally:
        await close_world(world)


# -- broken files in the deployment repository ----------------------------------------------------

BROKEN_POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
    tags: "regexp:(a+)+$"
environments:
  - name: staging
    path: ../outside/{service}.yaml
    from: release
    colour: blue
"""


async def test_a_broken_policy_fails_the_config_check_and_the_last_valid_one_serves(
    rworld: World,
) -> None:
    world = rworld
    await world.release("web", "1.0.0")  # the valid policy is loaded and used
    sha = await world.emulator.push_files(DEPLOY_REPO, {".github/conveyor.yml": BROKEN_POLICY},
                                          message="Break the policy")
    await world.settle()
    runs = world.emulator.check_runs(DEPLOY_REPO, sha, "conveyor/config-check")
    assert len(runs) == 1 and runs[0]["conclusion"] == "failure", runs
    annotations = runs[0]["output"]["annotations"]
    assert {a["path"] for a in annotations} == {".github/conveyor.yml"}
    messages = " ".join(a["message"] for a in annotations)
    for fragment in ("colour", ".."):
        assert fragment in messages, messages

    digest = await world.release("web", "1.1.0")
    staging = world.pull("Promote web 1.1.0 to staging")
    assert staging["merged"] is True  # the last valid policy (auto-merge) kept serving
    text = world.emulator.file(DEPLOY_REPO, "apps/web/overlays/staging/kustomization.yaml")
    assert text is not None and digest in text

    # Unparseable YAML is reported the same way, and the bot keeps working.
    sha = await world.emulator.push_files(DEPLOY_REPO, {".github/conveyor.yml": "version: [1\n"},
                                          message="Worse")
    await world.settle()
    runs = world.emulator.check_runs(DEPLOY_REPO, sha, "conveyor/config-check")
    assert len(runs) == 1 and runs[0]["conclusion"] == "failure"
    assert world.conveyor.ctx.metrics.handler_errors._metrics == {}


async def test_a_broken_manifest_is_refused_clearly_without_a_crash(rworld: World) -> None:
    world = rworld
    broken = "images:\n  - name: ghcr.io/acme/web\n    newTag: [0.9.0\n"
    sha = await world.emulator.push_files(
        DEPLOY_REPO, {"apps/web/overlays/staging/kustomization.yaml": broken},
        message="Break staging")
    await world.settle()
    check = world.emulator.check_runs(DEPLOY_REPO, sha, "conveyor/config-check")
    assert check and check[0]["conclusion"] == "failure"

    await world.release("web", "1.0.0")
    assert world.emulator.pulls(DEPLOY_REPO, state="all") == []
    source_sha = world.emulator.commit("acme/web", "v1.0.0")["sha"]
    refusals = world.emulator.check_runs("acme/web", source_sha, "conveyor/promotion (staging)")
    assert len(refusals) == 1 and refusals[0]["conclusion"] == "failure"
    summary = refusals[0]["output"]["summary"]
    assert "apps/web/overlays/staging/kustomization.yaml" in summary, summary
    assert world.conveyor.ctx.metrics.handler_errors._metrics == {}
    assert world.emulator.file(DEPLOY_REPO, "apps/web/overlays/staging/kustomization.yaml") \
        == broken


async def test_a_signed_body_that_is_not_json_after_its_action_is_dropped_by_the_worker(
        rworld: World, caplog: pytest.LogCaptureFixture) -> None:
    """Routed on its leading action, unparsed (only a holder of the secret can sign one): the
    worker finds it is not JSON, logs it, counts it and does nothing; the next is worked on."""
    world = rworld
    at_start = len(world.emulator.requests.entries)
    body = b'{"action":"released","release": {"tag_name": "v9.9.9"'
    async with aiohttp.ClientSession() as session:
        async with session.post(world.webhook_url, data=body,
                                headers=signed_headers("release", body, "cut-1")) as response:
            assert response.status == 202
        await world.conveyor.pool.wait_idle()
        errors = metric_samples(await metrics_text(session, world),
                                "conveyor_handler_errors_total")
    assert errors == {(("event", "release"),): 1.0}
    assert len(world.emulator.requests.entries) == at_start
    assert "delivery body is not a JSON object, nothing done" in caplog.text
    await world.release("web", "1.0.0")
    assert world.pull("Promote web 1.0.0 to staging")
