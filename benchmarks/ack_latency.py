"""1. Webhook acknowledgement latency: Conveyor against a bare aiohttp handler, same run.

Both servers are child processes started side by side (`python -m bot serve` and
`python -m benchmarks.bare`); this process is the sender. With two CPUs or more, both servers
(Conveyor with its workers process) run on one CPU and this process on another, so that the
senders and the emulator never take a server's CPU and each server meets only its own
processes' competition. For each concurrency level the
batches alternate between the two servers (bare, Conveyor, Conveyor, bare, ...), so that a
noisy neighbour slows both alike; such a run gives the ratio of the p99s, and each level runs
`REPEATS` times: the median ratio is reported, with every run's.

Two events Conveyor accepts (202), each padded to 25 KB and signed:
- a `release` from a repository of the installation that feeds no service: verified, routed
  on its leading action and queued like any release; the worker parses it, finds no service
  in the policy it already knows and logs one line, without a GitHub request (the emulator's
  count during the measurement is reported). A release that did promote would add ~13 GitHub
  requests of background work per delivery, which is what sections 2-4 measure, not the
  acknowledgement;
- an `issue_comment` written by a bot: the same intake, and a job that ends at the handler's
  first line: the intake's own cost.

The senders of those levels each wait for an answer before the next delivery, so that 50 or
200 of them keep both servers saturated: the p99 is the time to work through the queue, and
follows the CPU a delivery costs. GitHub sends otherwise: each delivery on its own, whatever
the answers to the others. The open-loop rows send the `release` deliveries at a fixed rate
(1,000 and 3,000 a second, each at its time) to both servers.

Then the same `release` deliveries again while Conveyor's workers are busy with real
promotions: CI keeps releasing `web`, whose staging file is a 5,000-line manifest of ~190
Deployments, and each release is promoted (the verified edit of that file, the PR, its config
check and gate, the merge, the dashboard) while the deliveries are timed. The emulator and the
senders share this process, so its work slows the bare handler's batches as much as Conveyor's.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import hashlib
import hmac
import json
import logging
import os
import socket
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from bot.sandbox.demo import DEPLOY_REPO

from .report import Section, median
from .scale import big_manifest
from .senders import Signed, Target, level_elsewhere, send_batch
from .wiring import SECRET, ChildServer, Stage, spawn_bare, spawn_bot, start_stage

BODY_BYTES = 25 * 1024
QUIET_REPO = "acme/docs"
CI_BOT = "github-actions[bot]"
BIG_FILE = "apps/web/overlays/staging/kustomization.yaml"
REPEATS = 5  # runs of each level: the machine is shared, so one run's ratio is noisy


def padded(event: str, payload: dict[str, Any], size: int = BODY_BYTES) -> Signed:
    """The payload with its text (release notes, comment) long enough for the body to be
    exactly `size` bytes, signed like GitHub signs it."""
    data = copy.deepcopy(payload)
    holder = data["release"] if event == "release" else data["comment"]
    holder["body"] = ""
    base = len(json.dumps(data, separators=(",", ":")).encode())
    holder["body"] = "x" * max(0, size - base)
    body = json.dumps(data, separators=(",", ":")).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return Signed(event, body, signature)


def workers_pid(intake: int) -> int:
    """The workers process `python -m bot serve` started (the intake's one child)."""
    children = Path(f"/proc/{intake}/task/{intake}/children").read_text().split()
    return int(children[0])


def split_cpus(available: set[int]) -> tuple[set[int] | None, set[int] | None]:
    """The CPUs of the senders (with the emulator) and of the servers under test: one each, so
    that both servers meet the same competition, their own processes', never the senders'.
    None, None with fewer than two."""
    if len(available) < 2:
        return None, None
    first, second = sorted(available)[:2]
    return {first}, {second}


async def quiet_events(stage: Stage) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Payloads of a release in an installed repository that feeds no service, and of a
    comment written by a bot (Conveyor ignores those at the first line of its handler)."""
    em = stage.emulator
    em.add_repo(QUIET_REPO, files={"README.md": "# docs\n"})
    await em.add_installation_repos(stage.demo.installation_id, [QUIET_REPO])
    since = len(em.deliveries)
    await em.create_tag(QUIET_REPO, "v1.0.0")
    await em.publish_release(QUIET_REPO, "v1.0.0", author="alice")
    issue = await em.open_issue(QUIET_REPO, "Release notes", author="alice")
    await em.comment(QUIET_REPO, int(issue["number"]), CI_BOT, "Docs built.")
    releases = [d.payload for d in em.deliveries[since:] if d.event == "release"]
    comment = next(d.payload for d in em.deliveries[since:] if d.event == "issue_comment")
    return releases, comment


async def keep_promoting(stage: Stage, stop: asyncio.Event, first: asyncio.Event,
                         promoted: list[str]) -> None:
    """CI releases `web` again and again; each release is promoted by Conveyor (its webhooks
    are forwarded). The next release waits until the previous one's PR exists."""
    em = stage.emulator
    loop = asyncio.get_running_loop()
    number = 1
    while not stop.is_set():
        version = f"1.{number}.0"
        await stage.publish_image("web", version)
        await em.publish_release("acme/web", f"v{version}", author="alice")
        deadline = loop.time() + 60
        while not stop.is_set() and loop.time() < deadline:
            if any(f"web {version} to staging" in pr["title"]
                   for pr in em.pulls(DEPLOY_REPO, state="all")):
                promoted.append(version)
                first.set()
                break
            await asyncio.sleep(0.05)
        number += 1


async def accepted(session: aiohttp.ClientSession, bot: ChildServer, event: str,
                   payloads: list[dict[str, Any]]) -> Signed:
    """The first payload Conveyor queues (it answers 202; 204 means not handled)."""
    for payload in payloads:
        signed = padded(event, payload)
        async with session.post(bot.url, data=signed.body, headers=signed.headers()) as response:
            if response.status == 202:
                return signed
    raise RuntimeError(f"Conveyor queues none of the {event} payloads")


def per_delivery_costs(signed: Signed) -> dict[str, float]:
    """Microseconds, on this machine, of each step Conveyor adds to the bare handler, timed
    alone: verifying the signature, routing on the event and leading action, remembering the
    delivery id, counting it, handing the job to the workers and answering (the intake);
    parsing the JSON and writing one JSON log line (the worker)."""
    import orjson
    from gidgethub import routing, sansio
    from prometheus_client import CollectorRegistry

    from bot.handlers import DECLARED
    from bot.handlers.routes import Handlers, bind
    from bot.metrics import deliveries_counter
    from bot.runtime.logs import JsonFormatter
    from bot.runtime.queue import Job
    from bot.serving.acknowledge import json_message, seen_deliveries
    from bot.serving.intake import leading_action
    from bot.serving.link import JOB, job_content, router_of, routing_table

    rounds = 300
    started = time.perf_counter()
    for _ in range(rounds):
        sansio.validate_event(signed.body, signature=signed.signature, secret=SECRET)
    verify = (time.perf_counter() - started) / rounds
    # the intake's copy of the routes, as the workers send it (handlers bound to nothing)
    router: routing.Router = router_of(routing_table(Handlers(bind(DECLARED, object())).router))
    started = time.perf_counter()
    for _ in range(rounds):
        signed.body.decode()
        router.fetch(sansio.Event({"action": leading_action(signed.body)},
                                  event=signed.event, delivery_id="d"))
    route = (time.perf_counter() - started) / rounds
    seen = seen_deliveries()
    ids = [str(uuid.uuid4()) for _ in range(rounds)]
    started = time.perf_counter()
    for delivery_id in ids:
        if delivery_id not in seen:
            seen.add(delivery_id)
    dedupe = (time.perf_counter() - started) / rounds
    counter = deliveries_counter(CollectorRegistry())
    started = time.perf_counter()
    for _ in range(rounds):
        counter.labels(signed.event, "accepted").inc()
    count = (time.perf_counter() - started) / rounds
    ours, theirs = socket.socketpair()
    buffer = bytearray(len(signed.body) + 4096)
    with ours, theirs:
        started = time.perf_counter()
        for delivery_id in ids:
            parts = job_content(Job(delivery_id, signed.event, signed.body))
            ours.sendall(b"".join([struct.pack(">I", 1 + sum(map(len, parts))), JOB, *parts]))
            theirs.recv_into(buffer)
        handoff = (time.perf_counter() - started) / rounds
    started = time.perf_counter()
    for _ in range(rounds):
        json_message(202, "accepted")
    answer = (time.perf_counter() - started) / rounds
    started = time.perf_counter()
    for _ in range(rounds):
        orjson.loads(signed.body)
    parse = (time.perf_counter() - started) / rounds
    logger = logging.getLogger("benchmarks.logline")
    logger.propagate = False
    with open(os.devnull, "w", encoding="utf-8") as sink:
        handler = logging.StreamHandler(sink)
        handler.setFormatter(JsonFormatter())
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        started = time.perf_counter()
        for _ in range(rounds):
            logger.info("no service is fed by this repository",
                        extra={"repository": QUIET_REPO})
        line = (time.perf_counter() - started) / rounds
        logger.handlers.clear()
    return {"verify_us": verify * 1e6, "route_us": route * 1e6, "dedupe_us": dedupe * 1e6,
            "count_us": count * 1e6, "handoff_us": handoff * 1e6, "answer_us": answer * 1e6,
            "parse_us": parse * 1e6, "log_line_us": line * 1e6}


def collection_pauses(ids: int = 100_000) -> dict[str, float]:
    """How long a full collection takes with `ids` delivery ids remembered the intake's way,
    and with the `cachetools.TTLCache` it used before (one linked-list node per id). The heap
    of this process is frozen first, as the intake's is after start-up."""
    import cachetools

    from bot.serving.acknowledge import seen_deliveries

    gc.collect()
    gc.freeze()
    try:
        timed: dict[str, float] = {}
        recent = seen_deliveries()
        cache: cachetools.TTLCache[str, bool] = cachetools.TTLCache(maxsize=ids, ttl=86400)
        for name, add in (("recent_keys_ms", recent.add),
                          ("ttl_cache_ms", lambda key: cache.__setitem__(key, True))):
            for _ in range(ids):
                add(str(uuid.uuid4()))
            started = time.perf_counter()
            gc.collect()
            timed[name] = (time.perf_counter() - started) * 1000
            recent.clear()
            cache.clear()
        return timed
    finally:
        gc.unfreeze()


async def run(quick: bool) -> Section:
    section = Section("1. Webhook acknowledgement latency (signed 25 KB deliveries)")
    # concurrency: (rounds, deliveries per round and target)
    levels = {1: (2, 10), 50: (1, 50), 200: (1, 200)} if quick else \
        {1: (4, 100), 50: (4, 500), 200: (4, 1000)}
    # deliveries a second: (rounds, deliveries per round and target)
    rates = {1000: (1, 50)} if quick else {1000: (4, 1000), 3000: (4, 3000)}
    repeats = 1 if quick else REPEATS
    stage = await start_stage()
    servers: list[ChildServer] = []
    results: dict[str, list[dict[str, Any]]] = {str(c): [] for c in levels}
    busy: dict[str, list[dict[str, Any]]] = {str(c): [] for c in levels}
    paced: dict[str, list[dict[str, Any]]] = {str(r): [] for r in rates}
    busy_promotions = 0
    mine = os.sched_getaffinity(0)
    sender_cpus, server_cpus = split_cpus(mine)
    try:
        if sender_cpus is not None:
            os.sched_setaffinity(0, sender_cpus)
        big, lines = big_manifest(5000)
        await stage.emulator.push_files(DEPLOY_REPO, {BIG_FILE: big}, author="bob",
                                        message="All Deployments in one file")
        releases, comment = await quiet_events(stage)
        bot, bare = await asyncio.gather(spawn_bot(stage, cpus=server_cpus),
                                         spawn_bare(cpus=server_cpus))
        servers += [bot, bare]
        health = f"http://127.0.0.1:{bot.port}/healthz"
        async with aiohttp.ClientSession() as probe:
            release = await accepted(probe, bot, "release", releases)
            ignored = await accepted(probe, bot, "issue_comment", [comment])
            conveyor = {"intake": bot.pid, "workers": workers_pid(bot.pid)}
            targets = [Target("bare", bare.url, release, {"bare": bare.pid}),
                       Target("release", bot.url, release, conveyor),
                       Target("comment", bot.url, ignored, conveyor)]
            for target in targets:  # token, policy discovery, connection set-up
                await send_batch(probe, target.url, target.signed, 10 if quick else 50, 10)
        await asyncio.sleep(0.5)
        stage.emulator.reset_counters()
        for _ in range(repeats):
            for concurrency, (rounds, per_round) in levels.items():
                results[str(concurrency)].append(
                    await level_elsewhere(targets, concurrency, rounds, per_round, health,
                                          cpus=sender_cpus))
            for rate, (rounds, per_round) in rates.items():
                paced[str(rate)].append(
                    await level_elsewhere(targets[:2], 200, rounds, per_round, health,
                                          rate=rate, cpus=sender_cpus))
        github_requests = len(stage.emulator.requests.entries)
        peak_kb = bot.memory().get("VmHWM", 0)
        stage.emulator.webhook_url = bot.url  # the releases below are promoted
        stop, first = asyncio.Event(), asyncio.Event()
        promoted: list[str] = []
        driver = asyncio.create_task(keep_promoting(stage, stop, first, promoted))
        try:
            await asyncio.wait_for(first.wait(), 120)  # the promotions are under way
            for _ in range(repeats):
                for concurrency, (rounds, per_round) in levels.items():
                    busy[str(concurrency)].append(
                        await level_elsewhere(targets[:2], concurrency, rounds, per_round,
                                              health, cpus=sender_cpus))
            busy_promotions = len(promoted)
        finally:
            stop.set()
            await driver
    finally:
        for server in servers:
            await server.stop()
        await stage.stop()
        os.sched_setaffinity(0, mine)

    for senders, runs in results.items():
        for name, label in (("release", "`release` of a repo feeding no service"),
                            ("comment", "`issue_comment` by a bot (intake alone)")):
            _ratio_row(section, f"{_senders(senders)}, {label}: p50 / p99", runs, name)
    for rate, runs in paced.items():
        _ratio_row(section, f"{rate} deliveries/s, each sent at its time (as GitHub sends), "
                   "`release` of a repo feeding no service: p50 / p99", runs, "release")
    for pace, runs in paced.items():
        _cpu_row(section, f"CPU per delivery at {pace} deliveries/s (user + system, from "
                 "/proc)", runs)
    if "200" in results:
        _cpu_row(section, "CPU per delivery, 200 senders (user + system, from /proc)",
                 results["200"])
    for senders, runs in busy.items():
        _ratio_row(section, f"{_senders(senders)}, `release` of a repo feeding no service, "
                   f"workers promoting a {lines}-line file: p50 / p99", runs, "release")
    section.add("promotions of that file completed while those were timed",
                str(busy_promotions), note="each: the verified edit, PR, config check, gate, "
                "merge, dashboard")
    costs = per_delivery_costs(release)
    section.add("of which the steps Conveyor adds (each timed alone, in this process)",
                f"intake: verify {costs['verify_us']:.1f} µs, UTF-8, leading action and route "
                f"{costs['route_us']:.1f} µs, dedupe {costs['dedupe_us']:.1f} µs, count "
                f"{costs['count_us']:.1f} µs, hand-off {costs['handoff_us']:.1f} µs, "
                f"JSON answer {costs['answer_us']:.1f} µs; worker: parse "
                f"{costs['parse_us']:.0f} µs, one JSON log line {costs['log_line_us']:.0f} µs",
                note="hand-off: the job's frame written to a socket pair and read at the other "
                     "end; the rest of the intake's CPU is aiohttp's, as the bare handler's")
    pauses = collection_pauses()
    section.add("a full garbage collection in the intake, 100,000 delivery ids remembered",
                f"{pauses['recent_keys_ms']:.2f} ms", note="the event loop held meanwhile; "
                f"with a `cachetools.TTLCache` of them: {pauses['ttl_cache_ms']:.1f} ms")
    section.add("GitHub requests by Conveyor during the measurement", str(github_requests),
                target="0", ok=github_requests == 0,
                note=f"peak RSS of Conveyor's processes, summed: {peak_kb / 1024:.0f} MB")
    section.add("CPUs", "one for the servers, one for the senders and the emulator"
                if server_cpus is not None else "shared (fewer than 2 available)",
                note=f"servers on {sorted(server_cpus or mine)}, this process on "
                     f"{sorted(sender_cpus or mine)}; Conveyor's workers process on the "
                     "servers' CPU too, at nice +19")
    section.data = {"body_bytes": len(release.body), "levels": results, "costs_us": costs,
                    "server_cpus": sorted(server_cpus or mine),
                    "busy_levels": busy, "paced_levels": paced,
                    "busy_promotions": busy_promotions, "collection_pauses_ms": pauses,
                    "github_requests_during_measurement": github_requests,
                    "conveyor_peak_rss_kb": peak_kb}
    return section


def _cpu_row(section: Section, label: str, runs: list[dict[str, Any]]) -> None:
    """Microseconds of CPU per delivery of each server's processes, the median over runs: what
    a delivery costs, whatever else shares the CPU (unlike the latencies)."""
    def per(name: str, process: str) -> float:
        return median([run[name]["cpu_us_per_delivery"].get(process, float("nan"))
                       for run in runs])

    intake, workers, bare = per("release", "intake"), per("release", "workers"), \
        per("bare", "bare")
    ratio = f" = **{intake / bare:.2f}×**" if bare > 0 else " (too few deliveries for /proc's "\
        "10 ms ticks)"
    section.add(label, f"intake {intake:.0f} µs vs bare {bare:.0f} µs{ratio}",
                note=f"median of {len(runs)} runs; Conveyor's workers process (at nice +19) "
                     f"{workers:.0f} µs more per delivery; load average "
                     f"{os.getloadavg()[0]:.2f} at the end")


def _senders(count: str) -> str:
    return f"{count} sender{'' if count == '1' else 's'}"


def _ratio_row(section: Section, label: str, runs: list[dict[str, Any]], name: str) -> None:
    """Conveyor's p99 over the bare handler's, per run (each run interleaves the two): the
    median run's figures, and every run's ratio."""
    ratios = []
    for run in runs:
        run[f"ratio_p99_{name}"] = run[name]["p99_ms"] / run["bare"]["p99_ms"]
        ratios.append(run[f"ratio_p99_{name}"])
    ordered = sorted(range(len(runs)), key=lambda index: ratios[index])
    middle = runs[ordered[len(ordered) // 2]]
    mine, base, ratio = middle[name], middle["bare"], median(ratios)
    spread = f"median of {len(runs)} runs: " + ", ".join(f"{r:.2f}" for r in sorted(ratios)) \
        + "×; " if len(runs) > 1 else ""
    failures = sum(run[name]["failures"] for run in runs)
    section.add(
        label,
        f"{mine['p50_ms']:.1f} / {mine['p99_ms']:.1f} ms vs bare "
        f"{base['p50_ms']:.1f} / {base['p99_ms']:.1f} ms = **{ratio:.2f}×**",
        target="p99 ≤ 1.3× bare", ok=ratio <= 1.3,
        note=f"{spread}{mine['count']} deliveries each a run; {mine['per_second']:.0f} vs "
             f"{base['per_second']:.0f} deliveries/s"
             + (f"; {failures} not 2xx" if failures else ""))


