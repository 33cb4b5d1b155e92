"""`python -m benchmarks.replicas`: one and three replicas sharing a Redis, side by side.

Starts a `redis-server` (from PATH) in a temp dir, the bundled GitHub emulator in this process
(every API request delayed by `--latency`, a stand-in for the round trip to GitHub), and N
`python -m bot serve` processes with `CONVEYOR_REDIS_URL`. Deliveries are posted round-robin,
closed-loop: at most `--window` are in flight (posted and not yet acknowledged in the stream),
so the figures are a sustained rate, not a burst into a queue. Two workloads:

- `light`: a push to a source repository's feature branch (handled, no GitHub request): the
  cost of the shared queue itself — intake, XREADGROUP, XACK;
- `promotion`: a `release` delivery of a release that is already live, under a new delivery
  id each time: the policy read (ETag), open PRs, the manifest, the repository lock — the same
  reads a real promotion makes before it writes, all on one deployment repository.

End-to-end latency is from the POST to the moment the delivery's stream entry is gone (it is
deleted when its work finished), sampled every 5 ms. Nothing here asserts a limit.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bot.redisq.client import Keys, connect
from bot.sandbox.demo import digest_of, seed
from conveyor_emulator import Emulator

SECRET = "benchmark-webhook-secret-0123456789"
REPO_ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, process: subprocess.Popen[bytes], within: float = 20) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}")
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


@dataclass
class Result:
    replicas: int
    workload: str
    deliveries: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.deliveries / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Cluster:
    """redis-server + emulator + N bot processes."""

    def __init__(self, workdir: Path, replicas: int, workers: int) -> None:
        self.workdir = workdir
        self.replicas = replicas
        self.workers = workers
        self.redis_port = free_port()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []
        self.emulator = Emulator(webhook_secret=SECRET, validate_openapi=False)

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    async def start(self) -> None:
        redis = self._spawn_redis()
        wait_port(self.redis_port, redis)
        await self.emulator.start()
        self.demo = seed(self.emulator)
        for index in range(self.replicas):
            self._spawn_bot(index)
        for port, process in zip(self.ports, self.processes[1:], strict=True):
            await asyncio.to_thread(wait_port, port, process)

    def _spawn_redis(self) -> subprocess.Popen[bytes]:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server not installed (apt-get install redis-server)")
        redis = subprocess.Popen(
            [binary, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir",
             str(self.workdir), "--save", "", "--appendonly", "no", "--logfile", "redis.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(redis)
        return redis

    def _spawn_bot(self, index: int) -> None:
        port = free_port()
        env = {
            "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT),
            "GITHUB_APP_ID": str(self.emulator.app_id),
            "GITHUB_PRIVATE_KEY": self.emulator.app_private_key_pem.replace("\n", "\\n"),
            "GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_API_URL": self.emulator.base_url,
            "CONVEYOR_REGISTRY_ENDPOINTS": f"ghcr.io={self.emulator.web_url}",
            "HOST": "127.0.0.1", "PORT": str(port), "CONVEYOR_RESYNC_INTERVAL": "0",
            "CONVEYOR_WORKERS": str(self.workers), "CONVEYOR_REDIS_URL": self.redis_url,
            "LOG_LEVEL": "WARNING",
        }
        with (self.workdir / f"bot{index}.log").open("wb") as log:
            process = subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=self.workdir,
                                       env=env, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        self.ports.append(port)

    async def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
        await self.emulator.stop()

    async def release_payload(self) -> dict[str, Any]:
        """Publish web 1.0.0 and let replica 0 promote it; returns its `release` payload."""
        self.emulator.webhook_url = f"http://127.0.0.1:{self.ports[0]}/api/github/webhooks"
        digest = digest_of("web:1.0.0")
        await self.emulator.publish_container("acme", "web", digest, ["1.0.0"],
                                              source_repo="acme/web")
        await self.emulator.create_tag("acme/web", "v1.0.0")
        await self.emulator.publish_release("acme/web", "v1.0.0")
        await self.emulator.settle()
        for _ in range(400):
            merged = [pr for pr in self.emulator.pulls("acme/deploy", state="all") if pr["merged"]]
            if merged:
                break
            await asyncio.sleep(0.05)
        await self.emulator.settle()
        release = next(d for d in self.emulator.deliveries
                       if d.event == "release" and d.action == "released")
        return dict(release.payload)


def signed(event: str, body: bytes, delivery: str) -> dict[str, str]:
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": f"sha256={digest}"}


async def drive(cluster: Cluster, workload: str, event: str, payload: dict[str, Any],
                count: int, window: int) -> Result:
    body = json.dumps(payload).encode()
    keys = Keys()
    redis = connect(cluster.redis_url)
    posted: dict[str, float] = {}
    latencies: list[float] = []
    slots = asyncio.Semaphore(window)
    finished = asyncio.Event()
    targets = itertools.cycle(cluster.ports)

    async def watch() -> None:
        while not finished.is_set() or posted:
            entries = await redis.xrange(keys.stream)
            present = {json.loads(fields["job"]).get("id") for _id, fields in entries}
            now = time.monotonic()
            for delivery in [d for d in posted if d not in present]:
                latencies.append(now - posted.pop(delivery))
                slots.release()
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=window * 2)) as http:
        async def post(index: int) -> None:
            delivery = f"{workload}-{cluster.replicas}-{index}"
            url = f"http://127.0.0.1:{next(targets)}/api/github/webhooks"
            sent = time.monotonic()
            async with http.post(url, data=body, headers=signed(event, body, delivery)) as resp:
                await resp.read()
                if resp.status != 202:
                    raise RuntimeError(f"delivery answered {resp.status}")
            posted[delivery] = sent

        tasks = []
        for index in range(count):
            await slots.acquire()
            tasks.append(asyncio.create_task(post(index)))
        await asyncio.gather(*tasks)
        finished.set()
        await watcher
    elapsed = time.monotonic() - started
    await redis.aclose()
    return Result(cluster.replicas, workload, count, elapsed, latencies)


async def measure(replicas: int, count: int, window: int, latency: float,
                  workers: int) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="conveyor-replicas-") as tmp:
        cluster = Cluster(Path(tmp), replicas, workers)
        try:
            await cluster.start()
            release = await cluster.release_payload()
            push = {"ref": "refs/heads/feature", "installation": release["installation"],
                    "repository": release["repository"], "sender": release["sender"],
                    "commits": [], "deleted": False}
            cluster.emulator.faults.latency = latency
            return [await drive(cluster, "light", "push", push, count, window),
                    await drive(cluster, "promotion", "release", release, count, window)]
        finally:
            await cluster.stop()


def render(results: list[Result], args: argparse.Namespace) -> str:
    lines = [f"{args.deliveries} deliveries per run, window {args.window}, "
             f"{args.workers} workers per replica, +{args.latency * 1000:.0f} ms per API request,"
             f" {os.cpu_count()} cores",
             "| replicas | workload | deliveries/s | p50 | p95 | max |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| {r.replicas} | {r.workload} | {r.rate:.0f} | "
                     f"{r.percentile(0.5) * 1000:.0f} ms | {r.percentile(0.95) * 1000:.0f} ms | "
                     f"{max(r.latencies) * 1000:.0f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replicas", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=600)
    parser.add_argument("--window", type=int, default=24, help="deliveries in flight at most")
    parser.add_argument("--latency", type=float, default=0.02,
                        help="seconds added to every emulated GitHub request (default 0.02)")
    parser.add_argument("--workers", type=int, default=8, help="CONVEYOR_WORKERS per replica")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results: list[Result] = []
    for replicas in args.replicas:
        results += asyncio.run(measure(replicas, args.deliveries, args.window, args.latency,
                                       args.workers))
    print(render(results, args))
    if args.json is not None:
        args.json.write_text(json.dumps([
            {"replicas": r.replicas, "workload": r.workload, "deliveries": r.deliveries,
             "seconds": round(r.seconds, 3), "per_second": round(r.rate, 1),
             "p50_ms": round(r.percentile(0.5) * 1000, 1),
             "p95_ms": round(r.percentile(0.95) * 1000, 1),
             "max_ms": round(max(r.latencies) * 1000, 1)} for r in results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
