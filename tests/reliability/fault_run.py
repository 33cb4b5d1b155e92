"""A randomized fault run: many releases while GitHub misbehaves and the bot is killed.

Releases of three services (a Kustomize overlay, Helm values, a plain manifest) flow through
staging (opened and auto-merged) into production (opened automatically once staging merges;
its gate waits for one approval). Between them, release trains of `storefront` (web and api)
are asked for in production, rollbacks of `worker` in staging, and Argo CD reports `worker`'s
staging deployment failing (staging rolls a failing digest back by itself). Meanwhile the
emulator answers 5xx, secondary-limit 403s with `Retry-After`, transient 404/409/422/405 and
slow answers at random, bot processes (`python -m bot serve`, in memory or several replicas on
one real Redis) are SIGKILLed at random moments and replaced, and the Redis server is
SIGKILLed and restarted. Then each service is released once more, the faults stop, the run
waits until nothing is queued and nothing is written any more, and checks what must hold
whatever happened (`fault_checks.py`).

A seed fixes the releases, the commands, the kill points and the fault dice, not the bot's own
timing. `--content-limits off` plays a GitHub Enterprise Server without rate limits (and runs
the bot with `CONVEYOR_CONTENT_LIMITS=off`): hundreds of releases in minutes.

    python -m tests.reliability.fault_run --seed 7 --releases 300 --kills 10 --mode redis \\
        --content-limits off --trains 10 --rollbacks 10 --failure-reports 10 --redis-restarts 3

prints what it found (exit code 1 when an invariant broke).
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

from bot.sandbox.demo import seed
from conveyor_emulator import Emulator
from tests.harness import SECRET
from tests.reliability.fault_checks import check, writes
from tests.reliability.fault_drive import Driver, Record, fault_files, schedule
from tests.reliability.fault_fleet import Fleet, unacknowledged_lost

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
# Nothing written for two resyncs (every 5 s): the bot has nothing left to do. Where it paces
# its writes within 80 a minute, a write may wait a minute for its turn.
QUIET, PACED_QUIET = 11.0, 65.0


@dataclass
class RunConfig:
    seed: int
    releases: int = 24
    kills: int = 2
    mode: str = "memory"  # "memory" (one process) | "redis" (replicas sharing one Redis)
    replicas: int = 3
    content_limits: bool = True  # False: a server without them, the bot told so
    trains: int = 0
    rollbacks: int = 0
    failure_reports: int = 0
    redis_restarts: int = 0
    settle_within: float = 240.0


@dataclass
class RunReport:
    config: RunConfig
    record: Record = field(default_factory=Record)
    problems: list[str] = field(default_factory=list)
    killed: int = 0
    redis_restarts: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    seconds: float = 0.0

    @property
    def released(self) -> dict[str, list[str]]:
        return self.record.released

    def lines(self) -> list[str]:
        c, done = self.config, self.record.done
        limits = "content limits on" if c.content_limits else "content limits off"
        head = (f"seed {c.seed}, {c.mode}, {limits}: {sum(map(len, self.released.values()))} "
                f"releases, {done['train']} trains, {done['rollback']} rollbacks, "
                f"{done['failure report']} failure reports, {self.killed} kills, "
                f"{self.redis_restarts} Redis restarts, {sum(self.faults.values())} faults "
                f"injected ({', '.join(f'{n} {kind}' for kind, n in self.faults.most_common())})"
                f", {self.requests} GitHub requests, {self.seconds:.0f} s")
        return [head, *(f"  - {p}" for p in self.problems)] if self.problems else [
            head, "  every invariant holds"]


async def fault_run(config: RunConfig, workdir: Path) -> RunReport:
    report = RunReport(config)
    started = time.monotonic()
    rng = random.Random(config.seed)
    emulator = Emulator(webhook_secret=SECRET, seed=config.seed,
                        rate_limiting=config.content_limits)
    await emulator.start()
    emulator.add_repo("acme/worker", files={"README.md": "# worker\n"})
    demo = seed(emulator, fault_files())
    installation = emulator.world.installations[demo.installation_id]
    assert installation.repo_ids is not None
    installation.repo_ids.add(emulator.world.repo_by_name("acme/worker").id)
    redis = None
    if config.mode == "redis":
        from tests.redis.support import RedisServer

        redis = RedisServer(workdir)
        redis.start()
    fleet = Fleet(emulator, workdir, replicas=config.replicas,
                  content_limits=config.content_limits, redis=redis)
    driver = Driver(emulator, rng)
    report.record = driver.record
    try:
        await fleet.start()
        await driver.start()
        emulator.faults.update(FAULTS)
        middle, last = schedule(rng, config.releases, config.trains, config.rollbacks,
                                config.failure_reports)
        commands = config.trains + config.rollbacks + config.failure_reports
        steps = len(middle) + len(last)
        kill_at = set(rng.sample(range(1, steps), min(config.kills, steps - 1)))
        restart_at = set(rng.sample(range(1, steps), min(config.redis_restarts, steps - 1))
                         if redis is not None else [])
        for index, step in enumerate([*middle, *last]):
            if index == len(middle) and commands:
                # the commands are worked off before the last releases: the end state the
                # checks expect is theirs
                report.problems += await settle(emulator, fleet, config.settle_within)
            await driver.do(step)
            await asyncio.sleep(rng.uniform(0.0, 0.4))
            if index in kill_at:
                await fleet.kill_one(rng)
                report.killed += 1
            if index in restart_at:
                await fleet.restart_redis(rng)
                report.redis_restarts += 1
        emulator.faults.reset()
        report.problems += await settle(emulator, fleet, config.settle_within, driver.record,
                                        replies_survive=redis is not None)
        report.problems += check(emulator, driver.record, replies_survive=redis is not None,
                                 redis_away=fleet.redis_away)
        if redis is not None:
            acknowledged = [d.guid for d in emulator.deliveries if d.status_code == 202]
            report.problems += [f"delivery {guid} acknowledged, then lost by Redis" for guid in
                                (await unacknowledged_lost(redis.url, acknowledged))[:5]]
    finally:
        report.requests = len(emulator.requests.entries)
        (workdir / "requests.tsv").write_text("".join(
            f"{e.at:.3f}\t{e.method}\t{e.url_path}\t{e.status}\n"
            for e in emulator.requests.entries))
        report.faults = injected(emulator)
        await fleet.stop()
        await emulator.stop()
        if redis is not None:
            redis.stop()
        report.seconds = time.monotonic() - started
    return report


async def settle(emulator: Emulator, fleet: Fleet, within: float, record: Record | None = None,
                 *, replies_survive: bool = False) -> list[str]:
    """Until nothing is queued, nothing has been written for a while (`QUIET`, `PACED_QUIET`)
    and (given the record) every invariant holds; else what was left after `within` seconds."""
    quiet = PACED_QUIET if fleet.content_limits else QUIET
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    written, since = -1, loop.time()
    left: list[str] = []
    while loop.time() < deadline:
        now_written = writes(emulator)
        if now_written != written:
            written, since = now_written, loop.time()
        left = [*await fleet.queued(), *(check(emulator, record, replies_survive=replies_survive,
                                               redis_away=fleet.redis_away)
                                         if record is not None else [])]
        if not left and loop.time() - since >= quiet:
            return []
        await asyncio.sleep(1.0)
    moving = loop.time() - since < quiet
    return [f"did not settle within {within:.0f} s" + (" (still writing)" if moving else "")
            + (f": {'; '.join(left[:4])}" if left else "")]


def injected(emulator: Emulator) -> Counter[str]:
    faults = Counter(emulator.injected)
    faults["secondary-limit 403"] = len(emulator.secondary.opened)
    for _operation, status, _message in emulator.transients.answered:
        faults[f"transient {status}"] += 1
    return +faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.fault_run",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seed", type=int, action="append", help="repeatable; default 1")
    parser.add_argument("--releases", type=int, default=100)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--mode", choices=("memory", "redis"), default="memory")
    parser.add_argument("--content-limits", choices=("on", "off"), default="on",
                        help="off: a GitHub Enterprise Server without rate limits")
    parser.add_argument("--trains", type=int, default=0)
    parser.add_argument("--rollbacks", type=int, default=0)
    parser.add_argument("--failure-reports", type=int, default=0)
    parser.add_argument("--redis-restarts", type=int, default=0, help="Redis mode only")
    parser.add_argument("--keep", type=Path, help="keep each run's logs in DIR/seed-N")
    args = parser.parse_args(argv)
    failed = False
    for one in args.seed or [1]:
        config = RunConfig(seed=one, releases=args.releases, kills=args.kills, mode=args.mode,
                           content_limits=args.content_limits == "on", trains=args.trains,
                           rollbacks=args.rollbacks, failure_reports=args.failure_reports,
                           redis_restarts=args.redis_restarts,
                           settle_within=max(240.0, args.releases * 3.0))
        if args.keep is not None:
            workdir = args.keep / f"seed-{one}"
            workdir.mkdir(parents=True, exist_ok=True)
            report = asyncio.run(fault_run(config, workdir))
        else:
            with tempfile.TemporaryDirectory(prefix="conveyor-fault-run-") as folder:
                report = asyncio.run(fault_run(config, Path(folder)))
        print("\n".join(report.lines()), flush=True)
        failed = failed or bool(report.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
