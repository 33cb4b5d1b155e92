"""8. The gate with Kustomize builds on a large repository: renders, runs, cache hits, requests.

A deployment repository of 500 services (20 with --quick), each a base and a staging and a
production overlay; production is gated, and every production overlay also builds a shared
component. The gate of hand-written pull requests is evaluated in this process through the
bot's own installation client (`GateService.verdict_for`), so the emulator counts exactly its
requests and the builder counts its kustomize runs, the renders shared runs answered and the
renders answered from its cache:
- one service's production patch changed (replicas): the only render it reaches, at base and head;
- the same evaluation again (a review, a re-run): answered from the build cache;
- a README change: no render reached;
- the shared component changed: every production overlay reached, rendered at base and head
  (overlays of one commit in shared runs, `bot/render/batching.py`).
Seconds per overlay are the evaluation's time over the overlays it rendered. The kustomize is
the machine's (`kustomize build`, else `kubectl kustomize`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.domain.policy import load_policy
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.render.tool import find_kustomize
from tests.manifest_texts import deployment

from .counting import tally
from .report import Section, ms
from .wiring import Stage, start_bot, start_stage

PROD = "apps/{name}/overlays/prod"


def policy(services: int) -> str:
    return ("version: 1\nallowed_images: [\"ghcr.io/acme/\"]\nservices:\n" + "".join(
        f"  svc-{i:03d}:\n    image: ghcr.io/acme/svc-{i:03d}\n    source: acme/web\n"
        for i in range(services)) + """\
environments:
  - name: staging
    path: apps/{service}/overlays/staging/kustomization.yaml
    from: release
  - name: production
    path: apps/{service}/overlays/prod/kustomization.yaml
    after: staging
    evidence: [merged]
""")


def overlay(name: str, component: bool) -> str:
    return ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - ../../base\n"
            + ("components:\n  - ../../../../components/shared\npatches:\n"
               "  - path: replicas.yaml\n" if component else "")
            + f"images:\n  - name: ghcr.io/acme/{name}\n    newTag: \"1.0.0\"\n"
            + f"    digest: sha256:{'ab' * 32}\n")


def replicas(name: str, count: int) -> str:
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n"
            f"spec:\n  replicas: {count}\n")


COMPONENT = ("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
             "commonLabels:\n  team: {team}\n")


def repository(services: int) -> dict[str, str]:
    files = {".github/conveyor.yml": policy(services), "README.md": "# deploy\n",
             "components/shared/kustomization.yaml": COMPONENT.format(team="core")}
    for i in range(services):
        name = f"svc-{i:03d}"
        files[f"apps/{name}/base/kustomization.yaml"] = "resources:\n  - deployment.yaml\n"
        files[f"apps/{name}/base/deployment.yaml"] = deployment(name)
        files[f"apps/{name}/overlays/staging/kustomization.yaml"] = overlay(name, False)
        files[f"{PROD.format(name=name)}/kustomization.yaml"] = overlay(name, True)
        files[f"{PROD.format(name=name)}/replicas.yaml"] = replicas(name, 2)
    return files


@dataclass(frozen=True)
class Evaluation:
    seconds: float
    requests: int
    runs: int  # kustomize processes
    shared_runs: int  # of which ran several overlays at once
    batched: int  # renders answered by those
    hits: int  # renders answered from the cache
    title: str

    @property
    def renders(self) -> int:
        """Overlays rendered: each alone in a process of its own, or in a shared run."""
        return self.runs - self.shared_runs + self.batched

    def note(self) -> str:
        per = f", {ms(self.seconds / self.renders)} an overlay" if self.renders else ""
        shared = (f" ({self.batched} in {self.shared_runs} shared runs)"
                  if self.shared_runs else "")
        return (f"{self.renders} renders in {self.runs} kustomize runs{shared}, {self.hits} "
                f"from the cache{per}; {self.requests} GitHub requests; verdict: {self.title}")


class Bench:
    def __init__(self, stage: Stage, services: int) -> None:
        self.stage = stage
        self.repo = DeploymentRepo(stage.repo, load_policy(policy(services)))
        self.number = 0

    async def pull(self, files: dict[str, str]) -> PullFacts:
        self.number += 1
        branch = f"change-{self.number}"
        await self.stage.emulator.push_files(self.stage.repo, files, branch=branch,
                                             message="A change")
        opened = await self.stage.emulator.open_pull(self.stage.repo, branch,
                                                     title=f"Change {self.number}",
                                                     author="alice")
        return PullFacts.from_api(opened)

    async def evaluate(self, facts: PullFacts) -> Evaluation:
        """Seconds, requests, tool runs, renders from shared runs and from the cache, and
        the verdict's title."""
        bot = self.stage.bot
        assert bot is not None
        ctx = bot.conveyor.ctx
        builder = ctx.builder
        assert builder is not None
        gh = await ctx.clients.installation(self.stage.demo.installation_id)
        runs, shared, batched, hits = (builder.runs, builder.shared_runs, builder.batched,
                                       builder.hits)
        self.stage.emulator.reset_counters()
        started = time.perf_counter()
        verdict = await bot.conveyor.capabilities.gates.verdict_for(gh, self.repo, facts)
        elapsed = time.perf_counter() - started
        requests = tally(self.stage.emulator.requests.entries).total
        return Evaluation(elapsed, requests, builder.runs - runs, builder.shared_runs - shared,
                          builder.batched - batched, builder.hits - hits, verdict.title)


async def run(quick: bool) -> Section:
    services = 20 if quick else 500
    tool = find_kustomize(None)
    section = Section(f"8. The gate with Kustomize builds: {services} services × 2 overlays")
    if tool is None:
        section.add("could not run", "no kustomize or kubectl on this machine", ok=False)
        return section
    stage = await start_stage(files=repository(services))
    try:
        bot = await start_bot(stage, forward=False)
        gh = await bot.conveyor.ctx.clients.installation(stage.demo.installation_id)
        await gh.getitem(f"/repos/{stage.repo}")  # the installation token, before counting
        bench = Bench(stage, services)
        one = await bench.pull({f"{PROD.format(name='svc-007')}/replicas.yaml":
                                replicas("svc-007", 5)})
        first = await bench.evaluate(one)
        again = await bench.evaluate(one)
        readme = await bench.evaluate(await bench.pull({"README.md": "# deploy\n\nNotes.\n"}))
        shared = await bench.evaluate(await bench.pull({
            "components/shared/kustomization.yaml": COMPONENT.format(team="platform")}))
    finally:
        await stage.stop()
    rows = (("one production patch (cold: tree and files read)", first),
            ("the same PR evaluated again", again),
            ("a README change", readme),
            (f"the component all {services} production overlays build", shared))
    for label, row in rows:
        section.add(label, ms(row.seconds), note=row.note())
    section.data = {
        "services": services, "kustomize": tool.describe(),
        **{key: {"seconds": row.seconds, "requests": row.requests, "runs": row.runs,
                 "shared_runs": row.shared_runs, "renders": row.renders,
                 "batched": row.batched, "cache_hits": row.hits}
           for key, row in zip(("patch", "again", "readme", "component"),
                               (first, again, readme, shared), strict=True)},
    }
    return section
