"""What a fault run does on GitHub, as CI, people and Argo CD would: releases of three
services, release trains and rollbacks asked for in comments, failed deployments reported;
and the record of it that the checks read."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bot.sandbox.demo import DEPLOY_REPO, release
from conveyor_emulator import Emulator
from tests.reliability.support import AUTO_POLICY, auto_files

SERVICES = ("web", "api", "worker")
GROUP = "storefront"  # web and api: the trains move them to production together
WATCHED = "worker"  # outside the group: its rollbacks never bring back a train's combination

# Staging watches its own deployment reports and rolls a failing digest back by itself.
STAGING = """  - name: staging
    path: apps/{service}/overlays/staging/kustomization.yaml
    from: any
    auto_merge: true
"""
FAULT_POLICY = AUTO_POLICY.replace(STAGING, STAGING + """    on_failure: rollback
    watch: 1h
    deployed_context: argocd/{service}-{env}
    deployed_by: ["argocd[bot]"]
""")
assert "on_failure: rollback" in FAULT_POLICY


def fault_files() -> dict[str, str]:
    return {**auto_files(), ".github/conveyor.yml": FAULT_POLICY}


@dataclass
class Record:
    """What the run did, for the checks."""

    released: dict[str, list[str]] = field(default_factory=dict)  # service → digests in order
    issue: int | None = None  # where the commands are written
    commands: list[int] = field(default_factory=list)  # ids of the command comments
    done: Counter[str] = field(default_factory=Counter)  # train, rollback, failure report


class Driver:
    def __init__(self, emulator: Emulator, rng: random.Random) -> None:
        self.emulator, self.rng = emulator, rng
        self.record = Record()
        self.versions: Counter[str] = Counter()
        self.issue: dict[str, Any] | None = None

    async def start(self) -> None:
        """The issue the run's commands are written in."""
        self.issue = await self.emulator.open_issue(DEPLOY_REPO, "Fault run", author="alice")
        self.record.issue = int(self.issue["number"])

    async def do(self, step: str) -> None:
        action, _, service = step.partition(":")
        if action == "release":
            await self.release(service)
        elif action == "train":
            await self.command("bob", f"/promote production {GROUP}")
        elif action == "rollback":
            await self.command("alice", f"/rollback {WATCHED} staging")
        elif action == "failure report":
            await self.failure_report()
        else:
            raise ValueError(step)
        if action != "release":
            self.record.done[action] += 1

    async def release(self, service: str) -> None:
        self.versions[service] += 1
        digest = await release(self.emulator, service, f"1.{self.versions[service]}.0")
        self.record.released.setdefault(service, []).append(digest)

    async def command(self, user: str, text: str) -> None:
        assert self.issue is not None
        made = await self.emulator.comment(DEPLOY_REPO, int(self.issue["number"]), user, text)
        self.record.commands.append(int(made["id"]))

    async def failure_report(self) -> None:
        """Argo CD reports the watched service's staging deployment failing, on the default
        branch's head (which pins what staging runs now)."""
        head = self.emulator.commit(DEPLOY_REPO, "main")["sha"]
        await self.emulator.set_status(DEPLOY_REPO, head, f"argocd/{WATCHED}-staging", "failure",
                                       user="argocd[bot]", description="health check failed")


def schedule(rng: random.Random, releases: int, trains: int, rollbacks: int,
             failure_reports: int) -> tuple[list[str], list[str]]:
    """The steps before the last releases (in random order), and the last release of each
    service: the end state the checks expect is that of those."""
    if releases < len(SERVICES):
        raise ValueError(f"a fault run releases each of its {len(SERVICES)} services at least "
                         "once")
    middle = [f"release:{rng.choice(SERVICES)}" for _ in range(releases - len(SERVICES))]
    middle += ["train"] * trains + ["rollback"] * rollbacks + ["failure report"] * failure_reports
    rng.shuffle(middle)
    last = [f"release:{service}" for service in rng.sample(SERVICES, len(SERVICES))]
    return middle, last
