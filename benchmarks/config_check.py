"""6. `conveyor/config-check` on a pull request touching 50 files: time and GitHub requests.

The pull request changes 25 Deployments and the 25 overlay kustomizations that pin their
images, in a repository of 25 services (base + overlay each). The check runs in this process
through the bot's own installation client, so the emulator counts exactly its requests:
- cold: a process that has not yet checked anything (schemas not loaded, caches empty);
- warm: a new commit of the same change (nothing cached for it), median of several;
- the same commit again (a re-run: file texts and layout are cached);
- the layout from directory listings, as when GitHub truncates a very large tree;
- warm with every request 50 ms slower.
"""

from __future__ import annotations

import time
from collections import Counter

from bot.configcheck import kubernetes as schemas
from bot.domain.policy import load_policy
from bot.github.immutable import ShaStore
from bot.promotion.configcheck import CONFIG_CHECK, check_change, run_config_check
from bot.sandbox.demo import digest_of

from .counting import Tally, tally
from .report import Section, median, ms
from .wiring import Stage, start_bot, start_stage

SERVICES = 25
LATENCY = 0.05
POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
kubernetes_version: "1.31"
services:
""" + "".join(
    f"  svc-{i:02d}:\n    image: ghcr.io/acme/svc-{i:02d}\n    source: acme/web\n"
    for i in range(SERVICES)
) + """\
environments:
  - name: production
    path: apps/{service}/overlays/prod/kustomization.yaml
    from: release
"""


def deployment(name: str, replicas: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{app: {name}}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/{name}
          ports:
            - containerPort: 8080
          resources:
            requests: {{cpu: 100m, memory: 128Mi}}
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector: {{app: {name}}}
  ports:
    - port: 80
      targetPort: 8080
"""


def overlay(name: str, version: str) -> str:
    return ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - ../../base\nimages:\n"
            f"  - name: ghcr.io/acme/{name}\n    newTag: \"{version}\"\n"
            f"    digest: {digest_of(f'{name}:{version}')}\n")


def change(round_: int) -> dict[str, str]:
    """The 50 files of one version of the change."""
    files: dict[str, str] = {}
    for index in range(SERVICES):
        name = f"svc-{index:02d}"
        files[f"apps/{name}/base/deployment.yaml"] = deployment(name, 2 + round_)
        files[f"apps/{name}/overlays/prod/kustomization.yaml"] = overlay(name, f"1.{round_}.0")
    return files


def repository() -> dict[str, str]:
    files = {".github/conveyor.yml": POLICY, "README.md": "# deploy\n", **change(0)}
    for index in range(SERVICES):
        files[f"apps/svc-{index:02d}/base/kustomization.yaml"] = "resources:\n  - deployment.yaml\n"
    return files


def by_route(measured: Tally) -> str:
    counts = Counter(f"{m} {p.removeprefix('/repos/{owner}/{repo}')}"
                     for m, p, _ in measured.requests)
    return ", ".join(f"{n}× {route}" for route, n in sorted(counts.items()))


class Bench:
    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.policy = load_policy(POLICY)
        self.rounds = 0

    async def commit(self) -> tuple[str, list[str]]:
        self.rounds += 1
        files = change(self.rounds)
        sha = await self.stage.emulator.push_files(
            self.stage.repo, files, branch=f"change-{self.rounds}", message="Bump all")
        return sha, sorted(files)

    async def check(self, sha: str, paths: list[str]) -> tuple[float, Tally]:
        stage = self.stage
        assert stage.bot is not None
        ctx = stage.bot.conveyor.ctx
        gh = await ctx.clients.installation(stage.demo.installation_id)
        stage.emulator.reset_counters()
        started = time.perf_counter()
        findings = await run_config_check(ctx, gh, stage.repo, self.policy, sha, paths)
        elapsed = time.perf_counter() - started
        measured = tally(stage.emulator.requests.entries)
        runs = stage.emulator.check_runs(stage.repo, sha, CONFIG_CHECK)
        if findings or not runs or runs[-1]["conclusion"] != "success":
            raise RuntimeError(f"the check did not pass: {findings[:3]}")
        return elapsed, measured

    async def listings(self, sha: str, paths: list[str]) -> Tally:
        stage = self.stage
        assert stage.bot is not None
        gh = await stage.bot.conveyor.ctx.clients.installation(stage.demo.installation_id)
        gh.shas = ShaStore()  # a cold read: nothing remembered from the runs before
        stage.emulator.reset_counters()
        report = await check_change(gh, stage.repo, self.policy, sha, paths, use_tree=False)
        if report.findings:
            raise RuntimeError(f"the check found problems: {report.findings[:3]}")
        return tally(stage.emulator.requests.entries)


async def run(quick: bool) -> Section:
    repeats = 3 if quick else 7
    section = Section(f"6. Config check: one PR touching {2 * SERVICES} files")
    stage = await start_stage(files=repository())
    try:
        bot = await start_bot(stage, forward=False)
        gh = await bot.conveyor.ctx.clients.installation(stage.demo.installation_id)
        await gh.getitem(f"/repos/{stage.repo}")  # the installation token, before counting
        bench = Bench(stage)
        schemas.catalogue.cache_clear()
        schemas._validator.cache_clear()
        sha, paths = await bench.commit()
        cold_s, cold = await bench.check(sha, paths)
        warm: list[tuple[float, Tally]] = []
        for _ in range(repeats):
            sha, paths = await bench.commit()
            warm.append(await bench.check(sha, paths))
        warm_s, warm_requests = median([s for s, _ in warm]), warm[-1][1]
        rerun_s, rerun = await bench.check(sha, paths)
        listed = await bench.listings(sha, paths)
        stage.emulator.faults.latency = LATENCY
        sha, paths = await bench.commit()
        slow_s, slow = await bench.check(sha, paths)
        stage.emulator.faults.latency = 0.0
    finally:
        await stage.stop()
    documents = 2 * SERVICES + SERVICES
    section.add("cold (first check in the process: schemas loaded)", ms(cold_s),
                note=f"{cold.total} requests: {by_route(cold)}")
    section.add("warm, a new commit", ms(warm_s),
                note=f"median of {repeats}; {warm_requests.total} requests: "
                     f"{by_route(warm_requests)}; {documents} documents, "
                     f"{2 * SERVICES} resources validated, {SERVICES} kustomizations")
    section.add("the same commit again (re-run)", ms(rerun_s),
                note=f"{rerun.total} requests: {by_route(rerun)}")
    section.add("layout from directory listings (a truncated tree)", f"{listed.total} requests",
                note=f"without posting; {by_route(listed)}")
    section.add(f"warm, every request +{LATENCY * 1000:.0f} ms", ms(slow_s),
                note=f"{slow.total} requests, up to 8 reads at a time")
    section.data = {
        "files": 2 * SERVICES, "documents": documents,
        "cold_s": cold_s, "warm_s": warm_s, "rerun_s": rerun_s, "latency_s": slow_s,
        "requests": {"cold": cold.as_dict(), "warm": warm_requests.as_dict(),
                     "rerun": rerun.as_dict(), "listings": listed.as_dict(),
                     "latency": slow.as_dict()},
    }
    return section
