"""10. The gate with Helm charts and pointers: renders per PR event, cache hits, requests, time.

One chart (`charts/app`) that N production environments render, each with a values file of
its own (`values-prod-K.yaml`, N = 19, 5 with --quick), after staging; one Argo CD
Application per production environment in `argocd/`. The gate of hand-written pull requests
is evaluated in this process through the bot's own installation client
(`GateService.verdict_for`), so the emulator counts exactly its requests and the builder counts
its renders:
- a template of the chart changed (a label): every production render reached, each rendered
  at base and head;
- the same evaluation again (a review, a re-run): answered from the render cache;
- one Application re-pointed at a values file the PR adds below the chart: what it follows
  rendered at the head (and, as the new file is below the chart, every production render at
  the head once more: Helm's `.Files` could read it);
- a README change: nothing rendered.
Target: at most two renders per reached environment per PR event, none on a repeat. The Helm
is the machine's (`CONVEYOR_HELM`, else `helm` on the PATH).
"""

from __future__ import annotations

import time

from bot.domain.policy import load_policy
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.render.tool import find_helm

from .counting import tally
from .report import Section, ms
from .wiring import Stage, start_bot, start_stage

CHART = "charts/app"
DIGEST = "sha256:" + "ab" * 32

TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    tier: {{ .Values.tier }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
"""


def policy(environments: int) -> str:
    return ("version: 1\nallowed_images: [\"ghcr.io/acme/\"]\nservices:\n"
            "  app:\n    image: ghcr.io/acme/app\n    source: acme/web\n"
            "environments:\n  - name: staging\n    path: charts/app/values-staging.yaml\n"
            "    from: release\n" + "".join(
                f"  - name: prod-{k}\n    path: charts/app/values-prod-{k}.yaml\n"
                "    after: staging\n    evidence: [merged]\n" for k in range(environments)))


def values(replicas: int) -> str:
    return (f"replicaCount: {replicas}\nimage:\n  repository: ghcr.io/acme/app\n"
            f"  tag: \"1.0.0@{DIGEST}\"\n")


def application(k: int, values_file: str) -> str:
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: app-prod-{k}
  namespace: argocd
spec:
  source:
    repoURL: https://github.com/acme/deploy
    targetRevision: HEAD
    path: {CHART}
    helm:
      valueFiles: [{values_file}]
  destination:
    namespace: prod-{k}
"""


def repository(environments: int) -> dict[str, str]:
    files = {".github/conveyor.yml": policy(environments), "README.md": "# deploy\n",
             f"{CHART}/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n",
             f"{CHART}/values.yaml": values(1) + "tier: web\n",
             f"{CHART}/templates/deployment.yaml": TEMPLATE,
             f"{CHART}/values-staging.yaml": values(1)}
    for k in range(environments):
        files[f"{CHART}/values-prod-{k}.yaml"] = values(2 + k)
        files[f"argocd/app-prod-{k}.yaml"] = application(k, f"values-prod-{k}.yaml")
    return files


class Bench:
    def __init__(self, stage: Stage, environments: int) -> None:
        self.stage = stage
        self.repo = DeploymentRepo(stage.repo, load_policy(policy(environments)))
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

    async def evaluate(self, facts: PullFacts) -> tuple[float, int, int, int, str]:
        """Seconds, requests, renders run, renders from the cache, and the verdict's title."""
        bot = self.stage.bot
        assert bot is not None
        ctx = bot.conveyor.ctx
        builder = ctx.builder
        assert builder is not None
        gh = await ctx.clients.installation(self.stage.demo.installation_id)
        runs, hits = builder.runs, builder.hits
        self.stage.emulator.reset_counters()
        started = time.perf_counter()
        verdict = await bot.conveyor.capabilities.gates.verdict_for(gh, self.repo, facts)
        elapsed = time.perf_counter() - started
        requests = tally(self.stage.emulator.requests.entries).total
        return elapsed, requests, builder.runs - runs, builder.hits - hits, verdict.title


async def run(quick: bool) -> Section:
    environments = 5 if quick else 19  # a policy holds at most 20 environments
    helm = find_helm(None)
    section = Section(f"10. The gate with a Helm chart {environments} production environments "
                      "render, and their Applications")
    if helm is None:
        section.add("could not run", "no helm on this machine", ok=False)
        return section
    stage = await start_stage(files=repository(environments))
    try:
        bot = await start_bot(stage, forward=False)
        gh = await bot.conveyor.ctx.clients.installation(stage.demo.installation_id)
        await gh.getitem(f"/repos/{stage.repo}")  # the installation token, before counting
        bench = Bench(stage, environments)
        template = await bench.pull({f"{CHART}/templates/deployment.yaml": TEMPLATE.replace(
            "    tier:", "    team: core\n    tier:")})
        first = await bench.evaluate(template)
        again = await bench.evaluate(template)
        pointer = await bench.evaluate(await bench.pull({
            f"{CHART}/values-canary.yaml": values(9),
            "argocd/app-prod-0.yaml": application(0, "values-canary.yaml")}))
        readme = await bench.evaluate(await bench.pull({"README.md": "# deploy\n\nNotes.\n"}))
    finally:
        await stage.stop()
    rows = ((f"a template all {environments} production renders read", first, environments),
            ("the same PR evaluated again", again, 0),
            # the new values file lies below the chart: every production render reads it
            ("one Application re-pointed at a new values file", pointer, environments),
            ("a README change", readme, 0))
    for label, (seconds, requests, runs, hits, title), reached in rows:
        per = f", {ms(seconds / runs)} a render" if runs else ""
        section.add(label, f"{runs} renders", target=f"≤ {2 * reached}",
                    ok=runs <= 2 * reached,
                    note=f"{hits} from the cache; {ms(seconds)}{per}; {requests} GitHub "
                         f"requests; verdict: {title}")
    section.data = {
        "environments": environments, "helm": helm.describe(),
        **{key: {"seconds": row[0], "requests": row[1], "renders": row[2], "cache_hits": row[3]}
           for key, row in zip(("template", "again", "pointer", "readme"),
                               (first, again, pointer, readme), strict=True)},
    }
    return section
