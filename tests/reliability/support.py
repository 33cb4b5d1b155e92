"""Worlds and invariants for the reliability tests: the emulator and the real bot over HTTP,
with the knobs the behaviour harness keeps fixed (retry policy, queue size, real time)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import aiohttp

from bot.domain.promotions.marker import parse_marker
from bot.github.client import RetryPolicy
from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY, DEPLOY_REPO
from conveyor_emulator import Emulator
from tests.harness import FAST_RETRY, SECRET, World, make_world

# A third service written as a plain manifest, and production opened automatically once
# staging merges, with a gate that only misses an approval: `action_required` until bob
# approves. Used where a test wants several services and a gate whose verdict is exact.
WORKER_MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  template:
    spec:
      containers:
        - name: worker
          image: ghcr.io/acme/worker:0.9.0
"""

AUTO_POLICY = (
    DEMO_POLICY
    .replace("""  api:
    image: ghcr.io/acme/api""", """  worker:
    image: ghcr.io/acme/worker
    source: acme/worker
    paths:
      staging: apps/worker/staging.yaml
      production: apps/worker/production.yaml
  api:
    image: ghcr.io/acme/api""")
    .replace("promote: manual", "promote: auto")
    .replace("evidence: [merged, deployed]", "evidence: [merged]")
    .replace("soak: 30m", "soak: 0")
    .replace("    deployed_context: argocd/{service}-{env}   # Argo CD labels its statuses per "
             "Application\n    deployed_by: [\"argocd[bot]\"]\n", "")
)
assert "acme/worker" in AUTO_POLICY and "promote: auto" in AUTO_POLICY


def auto_files() -> dict[str, str]:
    files = dict(DEMO_FILES)
    files[".github/conveyor.yml"] = AUTO_POLICY
    files["apps/worker/staging.yaml"] = WORKER_MANIFEST
    files["apps/worker/production.yaml"] = WORKER_MANIFEST
    return files


async def build_world(
    *,
    files: Mapping[str, str] | None = None,
    retry: RetryPolicy = FAST_RETRY,
    queue_size: int = 10_000,
    workers: int = 4,
    max_body_bytes: int = 25 * 1024 * 1024,
    validate_openapi: bool = False,
    source_repos: tuple[str, ...] = (),
    **settings: Any,
) -> World:
    """`tests.harness.make_world` with the settings the reliability tests vary."""
    return await make_world(files=files, retry=retry, workers=workers,
                            validate_openapi=validate_openapi, source_repos=source_repos,
                            registry_policy=None, queue_size=queue_size,
                            max_body_bytes=max_body_bytes, shutdown_grace=5, **settings)


def signed_headers(event: str, body: bytes, delivery: str, *, secret: str = SECRET
                   ) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": f"sha256={digest}"}


async def post_signed(session: aiohttp.ClientSession, url: str, event: str,
                      payload: Any, delivery: str) -> int:
    body = json.dumps(payload).encode()
    async with session.post(url, data=body,
                            headers=signed_headers(event, body, delivery)) as response:
        await response.read()
        return response.status


def promotion_prs(emulator: Emulator, repo: str = DEPLOY_REPO) -> list[dict[str, Any]]:
    """Every PR Conveyor opened (any state), with its marker."""
    found = []
    for pr in emulator.pulls(repo, state="all"):
        marker = parse_marker(pr.get("body"))
        if marker is not None and pr["head"]["ref"].startswith("conveyor/"):
            found.append({"pr": pr, "marker": marker})
    return found


def promotion_counts(emulator: Emulator, repo: str = DEPLOY_REPO
                     ) -> Counter[tuple[str, str, str]]:
    return Counter((p["marker"].service, p["marker"].environment, p["marker"].digest)
                   for p in promotion_prs(emulator, repo))


def assert_one_pr_per_promotion(emulator: Emulator, repo: str = DEPLOY_REPO) -> None:
    duplicates = {key: n for key, n in promotion_counts(emulator, repo).items() if n > 1}
    assert not duplicates, f"duplicate promotion PRs: {duplicates}"


def assert_no_half_made_branches(emulator: Emulator, repo: str = DEPLOY_REPO) -> None:
    """Every `conveyor/*` branch belongs to an open or a merged PR."""
    owned = {pr["head"]["ref"] for pr in emulator.pulls(repo, state="all")
             if pr["state"] == "open" or pr.get("merged")}
    orphans = [b for b in emulator.branches(repo) if b.startswith("conveyor/") and b not in owned]
    closed = {pr["head"]["ref"]: (pr["number"], pr["state"]) for pr in emulator.pulls(
        repo, state="all") if pr["head"]["ref"] in orphans}
    assert not orphans, f"branches without an open or merged PR: {orphans}; closed: {closed}"


def metric_samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Samples of one metric in Prometheus text format, keyed by their sorted labels."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    pattern = re.compile(rf"^{re.escape(name)}(?:\{{(.*)\}})? (\S+)$")
    for line in text.splitlines():
        match = pattern.match(line)
        if match is None:
            continue
        labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', match.group(1) or "")))
        out[labels] = float(match.group(2))
    return out


async def wait_for(predicate: Any, *, within: float, interval: float = 0.05) -> bool:
    """Poll `predicate()` until it is true or `within` seconds pass."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(interval)
    return bool(predicate())


class SendJournal:
    """In the order the bot's event loop saw them: each request the bot sent and each wait it
    was told (`RateLimiter.hold`), per installation, on the world's virtual time."""

    def __init__(self, world: World, monkeypatch: Any) -> None:
        """Installation ids as the limiter keys them (`APP` for the app's own requests)."""
        from bot.github.client import ConveyorGitHubAPI
        from bot.github.ratelimit import APP, RateLimiter

        self.events: list[tuple[str, int | None, float, str]] = []
        journal, timer = self.events, world.time
        send, hold = ConveyorGitHubAPI._send, RateLimiter.hold

        async def journal_send(api: ConveyorGitHubAPI, method: str, url: str, *args: Any
                               ) -> Any:
            key = APP if api.installation_id is None else api.installation_id
            journal.append(("send", key, timer.now(), f"{method} {url}"))
            timer.in_flight += 1
            try:
                return await send(api, method, url, *args)
            finally:
                timer.in_flight -= 1

        async def journal_hold(limiter: RateLimiter, installation: int, seconds: float) -> None:
            journal.append(("told", installation, timer.now() + seconds, ""))
            await hold(limiter, installation, seconds)

        monkeypatch.setattr(ConveyorGitHubAPI, "_send", journal_send)
        monkeypatch.setattr(RateLimiter, "hold", journal_hold)

    def told(self) -> int:
        return sum(1 for kind, *_ in self.events if kind == "told")

    def sent_inside_windows(self) -> list[str]:
        """Requests sent after their installation was told to wait, before the wait ended."""
        until: dict[int | None, float] = {}
        inside = []
        for kind, installation, at, what in self.events:
            if kind == "told":
                until[installation] = max(at, until.get(installation, 0.0))
            elif at < until.get(installation, 0.0):
                inside.append(f"{what} at +{at - until[installation]:.3f}s")
        return inside
