"""A randomized fault run: many releases while GitHub misbehaves and the bot is killed.

Releases of three services (a Kustomize overlay, Helm values, a plain manifest) flow through
staging (opened and auto-merged) into production (opened automatically once staging merges;
its gate waits for one approval), while the emulator answers 5xx, secondary-limit 403s with
`Retry-After`, transient 404/409/422/405 and slow answers at random, and bot processes
(`python -m bot serve`, in memory or several replicas on one real Redis) are SIGKILLed at
random moments and replaced. Then the faults stop and the run waits until the work settles,
and checks what must hold whatever happened:

- every promotion (service, environment, digest) has exactly one PR, and no `conveyor/`
  branch is left without an open or a merged PR;
- staging pins the last release of every service, merged once;
- production has exactly one open PR per service, for that same digest, and its gate is the
  right verdict (`action_required`: only the approval is missing);
- no request was sent inside a secondary-limit window the installation had been told of;
- the emulator saw no request GitHub would refuse.

A seed reproduces a run: `python -m tests.reliability.fault_run --seed 7 --releases 300
--mode redis` runs a long one and prints what it found (exit code 1 when an invariant broke).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.names import GATE_CHECK
from bot.sandbox.demo import DEPLOY_REPO, release, seed
from conveyor_emulator import Emulator
from tests.botprocess import BotProcess
from tests.harness import SECRET
from tests.reliability.support import auto_files, promotion_prs, wait_for

SERVICES = ("web", "api", "worker")
FAULTS = {
    "latency": 0.005,
    "error_rate": 0.03,
    "timeout_rate": 0.003,
    "timeout_seconds": 3.0,
    "secondary_rate_limit_rate": 0.01,
    "retry_after": 1,
    "fresh_branch_404_rate": 0.05,
    "stale_sha_409_rate": 0.05,
    "ref_update_failed_rate": 0.05,
    "merge_base_modified_rate": 0.05,
}


@dataclass
class RunConfig:
    seed: int
    releases: int = 24
    kills: int = 2
    mode: str = "memory"  # "memory" (one process) | "redis" (replicas sharing one Redis)
    replicas: int = 3
    settle_within: float = 240.0


@dataclass
class RunReport:
    config: RunConfig
    problems: list[str] = field(default_factory=list)
    released: dict[str, list[str]] = field(default_factory=dict)  # service → digests in order
    killed: int = 0
    requests: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        head = (f"seed {self.config.seed}, {self.config.mode}, {self.config.releases} releases, "
                f"{self.killed} kills, {self.requests} GitHub requests, {self.seconds:.0f} s")
        return [head, *(f"  - {p}" for p in self.problems)] if self.problems else [
            head, "  every invariant holds"]


class Fleet:
    """The bot processes of the run: one in memory mode, or replicas on one Redis."""

    def __init__(self, emulator: Emulator, workdir: Path, config: RunConfig,
                 redis_url: str | None) -> None:
        self.emulator, self.workdir, self.config = emulator, workdir, config
        self.redis_url = redis_url
        self.live: list[BotProcess] = []
        self.started = 0

    async def start_one(self) -> BotProcess:
        self.started += 1
        env = {"CONVEYOR_WORKERS": "4"}
        if self.redis_url is not None:
            env.update({"CONVEYOR_REDIS_URL": self.redis_url,
                        "CONVEYOR_REDIS_CLAIM_TIMEOUT": "5"})
        process = BotProcess(self.emulator, self.workdir, f"bot-{self.started}", resync=5,
                             extra_env=env)
        await process.wait_healthy(within=60)
        self.live.append(process)
        self.point_webhooks()
        return process

    def point_webhooks(self) -> None:
        """GitHub delivers to one address: a live process (any replica stores into Redis)."""
        self.emulator.webhook_url = self.live[0].webhook_url if self.live else None

    async def kill_one(self, rng: random.Random) -> None:
        victim = rng.choice(self.live)
        victim.kill()
        self.live.remove(victim)
        self.point_webhooks()
        # Let a secondary-limit window the dead process was told of run out: the next process
        # cannot know of it (in memory mode).
        await asyncio.sleep(self.emulator.faults.retry_after + 1)
        await self.start_one()

    async def stop(self) -> None:
        for process in self.live:
            await process.stop_async()
        self.live.clear()


async def fault_run(config: RunConfig, workdir: Path) -> RunReport:
    report = RunReport(config)
    started = time.monotonic()
    rng = random.Random(config.seed)
    emulator = Emulator(webhook_secret=SECRET, seed=config.seed)
    await emulator.start()
    emulator.add_repo("acme/worker", files={"README.md": "# worker\n"})
    demo = seed(emulator, auto_files())
    installation = emulator.world.installations[demo.installation_id]
    assert installation.repo_ids is not None
    installation.repo_ids.add(emulator.world.repo_by_name("acme/worker").id)
    redis = None
    if config.mode == "redis":
        from tests.redis.support import RedisServer

        redis = RedisServer(workdir)
        redis.start()
    fleet = Fleet(emulator, workdir, config, redis.url if redis else None)
    try:
        for _ in range(config.replicas if redis else 1):
            await fleet.start_one()
        emulator.faults.update(FAULTS)
        kill_at = set(rng.sample(range(1, config.releases), min(config.kills,
                                                                 config.releases - 1)))
        versions: Counter[str] = Counter()
        for index in range(config.releases):
            service = rng.choice(SERVICES)
            versions[service] += 1
            digest = await release(emulator, service, f"1.{versions[service]}.0")
            report.released.setdefault(service, []).append(digest)
            await asyncio.sleep(rng.uniform(0.0, 0.4))
            if index in kill_at:
                await fleet.kill_one(rng)
                report.killed += 1
        emulator.faults.reset()
        await settle(emulator, report, config.settle_within)
        report.problems += check(emulator, report)
    finally:
        report.requests = len(emulator.requests.entries)
        await fleet.stop()
        await emulator.stop()
        if redis is not None:
            redis.stop()
        report.seconds = time.monotonic() - started
    return report


def _state(emulator: Emulator, report: RunReport) -> dict[str, Any]:
    latest = {service: digests[-1] for service, digests in report.released.items()}
    staging, production = {}, {}
    for item in promotion_prs(emulator):
        marker, pr = item["marker"], item["pr"]
        key = (marker.service, marker.digest)
        if marker.environment == "staging" and pr.get("merged"):
            staging[key] = pr
        if marker.environment == "production" and pr["state"] == "open":
            production.setdefault(marker.service, []).append(pr)
    return {"latest": latest, "staging": staging, "production": production}


def _settled(emulator: Emulator, report: RunReport) -> bool:
    state = _state(emulator, report)
    return all((service, digest) in state["staging"]
               and [parse(pr) for pr in state["production"].get(service, [])] == [digest]
               for service, digest in state["latest"].items())


def parse(pr: dict[str, Any]) -> str | None:
    from bot.promotion.authorship.marker import parse_marker

    marker = parse_marker(pr.get("body"))
    return marker.digest if marker else None


async def settle(emulator: Emulator, report: RunReport, within: float) -> None:
    await wait_for(lambda: _settled(emulator, report), within=within, interval=0.5)
    await asyncio.sleep(6)  # one more resync: nothing it does may change the outcome
    await emulator.settle()


def check(emulator: Emulator, report: RunReport) -> list[str]:
    problems: list[str] = []
    counts = Counter((p["marker"].service, p["marker"].environment, p["marker"].digest)
                     for p in promotion_prs(emulator))
    problems += [f"{n} PRs for {key}" for key, n in counts.items() if n > 1]
    owned = {pr["head"]["ref"] for pr in emulator.pulls(DEPLOY_REPO, state="all")
             if pr["state"] == "open" or pr.get("merged")}
    problems += [f"branch {b} has no open or merged PR" for b in emulator.branches(DEPLOY_REPO)
                 if b.startswith("conveyor/") and b not in owned]
    state = _state(emulator, report)
    for service, digest in state["latest"].items():
        if (service, digest) not in state["staging"]:
            problems.append(f"staging never merged {service}'s last release {digest[:19]}")
        open_prs = state["production"].get(service, [])
        if [parse(pr) for pr in open_prs] != [digest]:
            problems.append(f"production PRs of {service}: {[parse(p) for p in open_prs]}, "
                            f"wanted [{digest[:19]}]")
        for pr in open_prs:
            runs = emulator.check_runs(DEPLOY_REPO, pr["head"]["sha"], GATE_CHECK)
            verdict = runs[-1]["conclusion"] if runs else None
            if verdict != "action_required":
                problems.append(f"the gate of #{pr['number']} ({service}) is {verdict}, "
                                "wanted action_required")
    problems += [f"sent inside a secondary-limit window: {hit.method} {hit.path}, "
                 f"{hit.at - opened:.2f} s after it opened"
                 for hit, opened in sent_inside_windows(emulator)[:5]]
    problems += [f"emulator: {v}" for v in emulator.violations[:5]]
    return problems


# A request already on its way when another one was told to wait arrives inside the window
# without the bot having known: only what arrives later than this after it opened was sent
# by a bot that knew.
IN_FLIGHT = 0.25


def sent_inside_windows(emulator: Emulator) -> list[tuple[Any, float]]:
    found = []
    for hit in emulator.secondary.inside:
        opened = max((start for key, start, until in emulator.secondary.opened
                      if key == hit.key and start <= hit.at < until), default=None)
        if opened is not None and hit.at - opened > IN_FLIGHT:
            found.append((hit, opened))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.fault_run",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, action="append", help="repeatable; default 1")
    parser.add_argument("--releases", type=int, default=100)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--mode", choices=("memory", "redis"), default="memory")
    args = parser.parse_args(argv)
    failed = False
    for one in args.seed or [1]:
        config = RunConfig(seed=one, releases=args.releases, kills=args.kills, mode=args.mode,
                           settle_within=max(240.0, args.releases * 3.0))
        with tempfile.TemporaryDirectory(prefix="conveyor-fault-run-") as workdir:
            report = asyncio.run(fault_run(config, Path(workdir)))
        print("\n".join(report.lines()), flush=True)
        failed = failed or bool(report.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
