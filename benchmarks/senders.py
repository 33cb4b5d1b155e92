"""The senders of section 1, in a process of their own.

`python -m benchmarks.senders` reads one level's description (targets with their signed
bodies, senders, rounds, rate) as JSON on stdin, sends it and writes each target's latencies
as JSON on stdout. The benchmark process holds the emulator, whose work for Conveyor's
promotions (the busy rows) would otherwise stall the senders' event loop in the middle of a
batch: a stall of the sender is a late answer of whichever server it was timing.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from .report import percentile


@dataclass(frozen=True)
class Signed:
    event: str
    body: bytes
    signature: str

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/benchmark",
            "X-GitHub-Event": self.event, "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": self.signature,
        }


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    signed: Signed
    # the server's processes whose CPU time is read around each batch: {"intake": pid, ...}
    processes: dict[str, int] = field(default_factory=dict)


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` so far (/proc/PID/stat), 0 when it is gone: what the
    process did, whatever else ran on its CPU meanwhile."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass
class Timed:
    """Latencies (s) of the answers, and how many were not 2xx."""

    latencies: list[float]
    failures: int = 0

    async def post(self, session: aiohttp.ClientSession, url: str, signed: Signed) -> None:
        headers = signed.headers()
        started = time.perf_counter()
        async with session.post(url, data=signed.body, headers=headers) as response:
            await response.read()
            status = response.status
        self.latencies.append(time.perf_counter() - started)
        if not 200 <= status < 300:
            self.failures += 1


async def send_batch(session: aiohttp.ClientSession, url: str, signed: Signed, count: int,
                     concurrency: int) -> tuple[list[float], int]:
    """`count` deliveries from `concurrency` senders: latencies (s) and non-2xx answers."""
    timed = Timed([])
    remaining = count

    async def sender() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await timed.post(session, url, signed)

    await asyncio.gather(*(sender() for _ in range(min(concurrency, count))))
    return timed.latencies, timed.failures


async def send_paced(session: aiohttp.ClientSession, url: str, signed: Signed, count: int,
                     rate: float) -> tuple[list[float], int]:
    """`count` deliveries at `rate` a second, each sent at its time whatever the answers to
    the others (as GitHub sends: every delivery on its own): latencies (s), non-2xx answers."""
    timed = Timed([])
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def deliver(index: int) -> None:
        await asyncio.sleep(max(0.0, start + index / rate - loop.time()))
        await timed.post(session, url, signed)

    await asyncio.gather(*(deliver(index) for index in range(count)))
    return timed.latencies, timed.failures


async def drained(session: aiohttp.ClientSession, health_url: str, within: float = 10.0
                  ) -> None:
    """Until Conveyor's queue is empty (its `/healthz` says), so that a batch, of either
    target, does not run beside the jobs of Conveyor's batch before it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        async with session.get(health_url) as response:
            if (await response.json()).get("queue_depth", 0) == 0:
                return
        await asyncio.sleep(0.01)


async def level(targets: list[Target], concurrency: int, rounds: int, per_round: int,
                health_url: str, rate: float | None = None) -> dict[str, Any]:
    """Each target's latencies over `rounds` batches of `per_round` deliveries: from
    `concurrency` senders each waiting for its answer, or with `rate`, at that many a second
    (and up to `concurrency` connections)."""
    sessions = {t.name: aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
                for t in targets}
    latencies: dict[str, list[float]] = {t.name: [] for t in targets}
    cpu: dict[str, dict[str, float]] = {t.name: dict.fromkeys(t.processes, 0.0) for t in targets}
    busy = dict.fromkeys(sessions, 0.0)
    failures = dict.fromkeys(sessions, 0)
    probe = aiohttp.ClientSession()
    try:
        for target in targets:  # open the connections before timing
            await send_batch(sessions[target.name], target.url, target.signed, concurrency,
                             concurrency)
        for index in range(rounds * len(targets)):
            # the order rotates every round, so that each target runs first equally often
            round_number, slot = divmod(index, len(targets))
            target = targets[(slot + round_number) % len(targets)]
            await drained(probe, health_url)
            before = {label: cpu_seconds(pid) for label, pid in target.processes.items()}
            started = time.perf_counter()
            got, failed = (
                await send_paced(sessions[target.name], target.url, target.signed, per_round,
                                 rate) if rate is not None else
                await send_batch(sessions[target.name], target.url, target.signed, per_round,
                                 concurrency))
            busy[target.name] += time.perf_counter() - started
            await drained(probe, health_url)  # the workers' part of the batch done too
            for label, pid in target.processes.items():
                cpu[target.name][label] += cpu_seconds(pid) - before[label]
            latencies[target.name] += got
            failures[target.name] += failed
    finally:
        for session in [*sessions.values(), probe]:
            await session.close()
    return {name: {
        "count": len(values),
        "p50_ms": percentile(values, 0.50) * 1000,
        "p99_ms": percentile(values, 0.99) * 1000,
        "max_ms": max(values) * 1000,
        "per_second": len(values) / busy[name] if busy[name] else 0.0,
        "failures": failures[name],
        "cpu_us_per_delivery": {label: seconds / len(values) * 1e6
                                for label, seconds in cpu[name].items()},
    } for name, values in latencies.items()}


def describe(targets: list[Target], concurrency: int, rounds: int, per_round: int,
             health_url: str, rate: float | None) -> bytes:
    return json.dumps({
        "targets": [{"name": t.name, "url": t.url, "event": t.signed.event,
                     "body": base64.b64encode(t.signed.body).decode(),
                     "signature": t.signed.signature, "processes": t.processes}
                    for t in targets],
        "concurrency": concurrency, "rounds": rounds, "per_round": per_round,
        "health_url": health_url, "rate": rate,
    }).encode()


def described(spec: dict[str, Any]) -> tuple[list[Target], dict[str, Any]]:
    targets = [Target(t["name"], t["url"], Signed(t["event"], base64.b64decode(t["body"]),
                                                  t["signature"]), t["processes"])
               for t in spec["targets"]]
    return targets, {key: spec[key] for key in
                     ("concurrency", "rounds", "per_round", "health_url", "rate")}


async def level_elsewhere(targets: list[Target], concurrency: int, rounds: int, per_round: int,
                          health_url: str, rate: float | None = None,
                          cpus: set[int] | None = None) -> dict[str, Any]:
    """`level`, run by a `python -m benchmarks.senders` process (on `cpus`)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "benchmarks.senders", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        preexec_fn=None if cpus is None else functools.partial(os.sched_setaffinity, 0, cpus))
    out, _ = await process.communicate(
        describe(targets, concurrency, rounds, per_round, health_url, rate))
    if process.returncode != 0:
        raise RuntimeError(f"the senders' process failed ({process.returncode})")
    result: dict[str, Any] = json.loads(out)
    return result


def main() -> int:
    targets, knobs = described(json.load(sys.stdin))
    json.dump(asyncio.run(level(targets, **knobs)), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
