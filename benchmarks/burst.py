"""4. Burst: many deliveries of mixed events at once, against `python -m bot serve`.

The bot is a child process (production settings, INFO logs to a file), so that its memory is
its own: the proportional set size of its processes (the intake and the workers), summed and
sampled every 0.1 s from /proc/<pid>/smaps_rollup, and their peak RSS (`VmHWM`); the emulator
and the sender share this process.

The mix is what GitHub sends while CI and people work: for each of several versions of two
services, the tag push, the `registry_package` and `package` events of the image and the
`release` events (created, published, released); `/status`, `/help` and plain comments; Argo CD
commit statuses; pushes to the deployment repository; events Conveyor does not handle. They are
recorded from the emulator with webhooks held, then sent at once, cycling through them with fresh
delivery ids until the count is reached (a repeated release is work the bot must recognise as
already done). Webhooks caused by the bot's own work (pull_request, push, check_run...) are
forwarded to it as they happen. Drained means: every delivery accepted (202), sent or caused,
has been processed and the queue is empty, read from the bot's /metrics.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bot.sandbox.demo import digest_of
from conveyor_emulator.events.webhooks import Delivery

from .report import Section
from .wiring import REPO_ROOT, ChildServer, Stage, family, pss_kb, spawn_bot, start_stage

SENDERS = 200
TARGET_MB = 110
_SAMPLE = re.compile(r'^(conveyor_\w+)\{([^}]*)\}\s+([0-9.eE+-]+)$')


async def record_mix(stage: Stage, versions: int, chatter: int) -> list[Delivery]:
    """Act as CI and people with webhooks held; the deliveries GitHub would have sent."""
    em = stage.emulator
    since = stage.hold()
    for index in range(versions):
        for service in ("web", "api"):
            source = f"acme/{service}"
            version = f"2.{index}.0"
            await em.create_tag(source, f"v{version}")
            sha = em.commit(source, f"v{version}")["sha"]
            digest = digest_of(f"{service}:{version}")
            em.add_workflow_run(source, sha, name="release")
            em.add_attestation(source, digest, commit=sha,
                               ref=f"refs/tags/v{version}")
            await em.publish_container("acme", service, digest, [version], source_repo=source,
                                       revision=sha)
            await em.publish_release(source, f"v{version}", author="alice")
    issue = await em.open_issue(stage.repo, "Release train", author="alice")
    head = em.commit(stage.repo, "main")["sha"]
    for index in range(chatter):
        text = ("/status", "/help", "Looks good to me.", "/status web")[index % 4]
        await em.comment(stage.repo, int(issue["number"]), ("alice", "bob")[index % 2], text)
        await em.set_status(stage.repo, head, "argocd/web-staging", "success")
        if index % 4 == 0:
            await em.push_files(stage.repo, {"docs/notes.md": f"Note {index}\n"},
                                message=f"Notes {index}", author="bob")
            head = em.commit(stage.repo, "main")["sha"]
    return list(em.deliveries[since:])


@dataclass
class Progress:
    accepted: float = 0.0
    processed: float = 0.0
    queue_depth: float = 0.0


def parse_metrics(text: str) -> Progress:
    progress = Progress()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.group(1), match.group(2), float(match.group(3))
        if name == "conveyor_deliveries_total" and 'outcome="accepted"' in labels:
            progress.accepted += value
        elif name == "conveyor_processing_seconds_count" and 'event="conveyor.' not in labels:
            progress.processed += value
        elif name == "conveyor_queue_depth":
            progress.queue_depth = value
    return progress


async def wait_drained(session: aiohttp.ClientSession, stage: Stage, bot: ChildServer,
                       limit: float) -> tuple[bool, Progress]:
    metrics_url = f"http://127.0.0.1:{bot.port}/metrics"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    quiet = 0
    progress = Progress()
    while loop.time() < deadline:
        async with session.get(metrics_url) as response:
            progress = parse_metrics(await response.text())
        idle = (progress.processed >= progress.accepted and progress.queue_depth == 0
                and stage.emulator.pending_deliveries() == 0)
        quiet = quiet + 1 if idle else 0
        if quiet >= 2:
            return True, progress
        await asyncio.sleep(0.05)
    return False, progress


async def send_all(session: aiohttp.ClientSession, stage: Stage, url: str,
                   deliveries: list[tuple[Delivery, str]]) -> list[int]:
    """Sign and send every delivery at once (SENDERS connections); their status codes."""
    import json

    async def one(delivery: Delivery, guid: str) -> int:
        body = json.dumps(delivery.payload, separators=(",", ":")).encode()
        headers = stage.emulator.hooks.headers_for(delivery, body)
        headers["X-GitHub-Delivery"] = guid
        try:
            async with session.post(url, data=body, headers=headers) as response:
                await response.read()
                return response.status
        except aiohttp.ClientError:
            return 0

    return list(await asyncio.gather(*(one(d, g) for d, g in deliveries)))


ROLES = ("intake", "workers", "tools")


def role_of(pid: int, root: int, parents: dict[int, int]) -> str:
    """The intake (`python -m bot serve` itself), its workers process, or a tool one of them
    runs (kubectl kustomize, helm template)."""
    if pid == root:
        return "intake"
    return "workers" if parents.get(pid) == root else "tools"


def intake_modules() -> int:
    """The modules `python -m bot serve`'s intake process has loaded once it is set up."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, bot.serving.serve, bot.serving.front; "
         "print(len(sys.modules))"], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    return int(done.stdout)


class PeakMemory:
    """While `sample` runs: the largest summed PSS of Conveyor's own processes (the intake and
    its workers), the largest with the render tools they run, what each role held at that
    instant, and the largest of each role's (not at one instant, so they need not add up)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before_by_role = self._by_role()
        self.before = sum(self.before_by_role.values())
        self.kb = self.before
        self.own_kb = self.before
        self.at_peak = dict(self.before_by_role)
        self.by_role = dict(self.before_by_role)

    def _by_role(self) -> dict[str, int]:
        sizes = dict.fromkeys(ROLES, 0)
        members = family(self.pid)
        parents = {child: parent for parent in members
                   for child in _children(parent)}
        for member in members:
            sizes[role_of(member, self.pid, parents)] += pss_kb(member, descendants=False)
        return sizes

    async def sample(self, every: float = 0.1) -> None:
        while True:
            sizes = self._by_role()
            self.own_kb = max(self.own_kb, sizes["intake"] + sizes["workers"])
            if sum(sizes.values()) > self.kb:
                self.kb, self.at_peak = sum(sizes.values()), sizes
            for role, kb in sizes.items():
                self.by_role[role] = max(self.by_role[role], kb)
            await asyncio.sleep(every)


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in
                Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


async def run(quick: bool) -> Section:
    count = 150 if quick else 1000
    section = Section(f"4. Burst: {count} mixed deliveries at once (`python -m bot serve`)")
    stage = await start_stage()
    bot: ChildServer | None = None
    data: dict[str, Any] = {}
    try:
        templates = await record_mix(stage, versions=2 if quick else 15,
                                     chatter=8 if quick else 40)
        deliveries = [(templates[i % len(templates)],
                       templates[i].guid if i < len(templates) else str(uuid.uuid4()))
                      for i in range(count)]
        mix: dict[str, int] = {}
        for delivery, _ in deliveries:
            mix[delivery.event] = mix.get(delivery.event, 0) + 1
        bot = await spawn_bot(stage)
        stage.emulator.webhook_url = bot.url
        stage.emulator.reset_counters()
        first_caused = len(stage.emulator.deliveries)
        peak = PeakMemory(bot.pid)
        sampling = asyncio.create_task(peak.sample())
        async with aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=SENDERS)) as session:
            started = time.perf_counter()
            statuses = await send_all(session, stage, bot.url, deliveries)
            answered = time.perf_counter() - started
            drained, progress = await wait_drained(session, stage, bot, 300 if quick else 540)
            elapsed = time.perf_counter() - started
        sampling.cancel()
        memory = bot.memory()
        caused = stage.emulator.deliveries[first_caused:]
        requests = stage.emulator.requests.entries
        not_modified = sum(1 for e in requests if e.was_304)
        bad = [s for s in statuses if not 200 <= s < 300]
        bad_caused = [d.status_code for d in caused if not 200 <= d.status_code < 300]
        codes: dict[str, int] = {}
        for status in statuses:
            codes[str(status)] = codes.get(str(status), 0) + 1
        data = {
            "deliveries": count, "mix": mix, "templates": len(templates),
            "status_codes": codes, "answered_s": answered, "drain_s": elapsed,
            "drained": drained, "accepted": progress.accepted, "processed": progress.processed,
            "caused_deliveries": len(caused), "caused_not_2xx": len(bad_caused),
            "github_requests": len(requests), "github_304": not_modified,
            "pss_before_kb": peak.before, "peak_pss_kb": peak.kb,
            "peak_own_pss_kb": peak.own_kb, "at_peak_by_role_kb": peak.at_peak,
            "pss_before_by_role_kb": peak.before_by_role, "peak_pss_by_role_kb": peak.by_role,
            "intake_modules": intake_modules(),
            "peak_rss_kb": memory.get("VmHWM", 0), "processes": len(family(bot.pid)),
            "senders": SENDERS,
        }
    finally:
        if bot is not None:
            await bot.stop()
        await stage.stop()

    mix_text = ", ".join(f"{event} {n}" for event, n in sorted(data["mix"].items(),
                                                                key=lambda kv: -kv[1]))
    section.add("all answered", f"{data['answered_s']:.2f} s",
                note=f"{SENDERS} connections; mix: {mix_text}")
    section.add("drained (every delivery sent or caused processed)",
                f"{data['drain_s']:.1f} s" + ("" if data["drained"] else " (not drained!)"),
                note=f"{data['caused_deliveries']} more deliveries caused by the bot's work; "
                     f"{data['processed']:.0f} processed")
    roles, before_roles = data["peak_pss_by_role_kb"], data["pss_before_by_role_kb"]
    at_peak = data["at_peak_by_role_kb"]
    section.add("peak memory of the bot's processes, the render tools they run included "
                "(summed PSS, sampled every 0.1 s)", f"{data['peak_pss_kb'] / 1024:.0f} MB",
                target=f"≤ {TARGET_MB} MB", ok=data["peak_pss_kb"] <= TARGET_MB * 1024,
                note=f"{data['pss_before_kb'] / 1024:.0f} MB before the burst; at the peak: "
                     f"intake {at_peak['intake'] / 1024:.0f} MB, workers "
                     f"{at_peak['workers'] / 1024:.0f} MB, kubectl/helm "
                     f"{at_peak['tools'] / 1024:.0f} MB (a render tool is a process of its own "
                     "while it runs, 2 at most at once)")
    section.add("peak memory of Conveyor's own processes, the intake and its workers (summed PSS)",
                f"{data['peak_own_pss_kb'] / 1024:.0f} MB",
                note=f"their peak RSS (VmHWM) summed {data['peak_rss_kb'] / 1024:.0f} MB, shared "
                     "pages counted in each")
    section.add("of which, each process's peak PSS (before the burst)",
                f"intake {roles['intake'] / 1024:.0f} MB ({before_roles['intake'] / 1024:.0f}), "
                f"workers {roles['workers'] / 1024:.0f} MB ({before_roles['workers'] / 1024:.0f}),"
                f" kubectl/helm run by them {roles['tools'] / 1024:.0f} MB",
                note=f"the intake loads {data['intake_modules']} modules")
    section.add("GitHub requests made",
                f"{data['github_requests']} ({data['github_requests'] - data['github_304']} + "
                f"{data['github_304']}×304)")
    section.add("deliveries answered 2xx",
                f"{count - len(bad)}/{count} sent, "
                f"{data['caused_deliveries'] - data['caused_not_2xx']}/{data['caused_deliveries']}"
                " caused", target="all", ok=not bad and not data["caused_not_2xx"],
                note=", ".join(f"{code}: {n}" for code, n in sorted(data["status_codes"].items())))
    section.data = data
    return section
