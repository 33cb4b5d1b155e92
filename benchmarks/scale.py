"""5. 500 services × 4 environments on one installation, inside GitHub's budget.

- a cold bot's start, first dashboard and first full resync (`resync_all` on a fresh bot: the
  token, policy discovery, every service's reconcile, the dashboard issue created), then a
  dashboard refresh with nothing changed, one after a file changed by hand, and an idle
  resync: the requests that count against the installation's rate limit, `304`s apart;
- the same resync by three replicas sharing a Redis (a lease per installation), against one;
- the GitHub requests one service's release costs with few and with many services in the same
  deployment repository (two worlds, same run), beside the REST minimum, and what the webhooks
  that promotion causes cost;
- `load_policy` (parse + validate) of the policy, and `promote_image` on a 5,000-line file.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.domain.policy import load_policy
from bot.manifests import promote_image
from bot.promotion.dashboard.issue import refresh_dashboard
from bot.promotion.resync.reconcile import resync_all
from bot.sandbox.demo import digest_of
from conveyor_emulator import Emulator

from .counting import AFTER_PR, RELEASE_TO_PR, Need, Tally, compare, tally
from .report import Section, median, ms
from .requests_per_promotion import (
    cold_minimum,
    deliver_alone,
    hold_release,
    idle_resync,
    measure_quiet,
)
from .scale_replicas import replicas_resync
from .wiring import Stage, start_bot, start_stage

ENVIRONMENTS = ("dev", "staging", "production", "production-eu")
ENVIRONMENTS_YAML = """\
environments:
  - name: dev
    path: apps/{service}/dev/kustomization.yaml
    from: release
    auto_merge: true
  - name: staging
    path: apps/{service}/staging/kustomization.yaml
    after: dev
    promote: manual
    evidence: [merged]
  - name: production
    path: apps/{service}/production/kustomization.yaml
    after: staging
    promote: manual
    evidence: [merged, deployed]
    soak: 30m
    approvals: 1
    approvers: ["@acme/sre"]
    deployed_context: argocd/staging
  - name: production-eu
    path: apps/{service}/production-eu/kustomization.yaml
    after: production
    promote: manual
    evidence: [merged]
"""


def service_names(count: int) -> list[str]:
    """`web` (which the emulator can release) and count - 1 others."""
    return ["web", *(f"svc-{index:03d}" for index in range(1, count))]


def policy_text(count: int) -> str:
    lines = ["version: 1", 'allowed_images: ["ghcr.io/acme/"]', "services:"]
    for name in service_names(count):
        lines += [f"  {name}:", f"    image: ghcr.io/acme/{name}", f"    source: acme/{name}",
                  '    tags: "semver:>=0.1.0"']
    return "\n".join(lines) + "\n" + ENVIRONMENTS_YAML


def kustomization(name: str) -> str:
    return ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - ../base\nimages:\n"
            f"  - name: ghcr.io/acme/{name}\n    newTag: \"0.9.0\"\n")


def deployment_files(count: int) -> dict[str, str]:
    files = {".github/conveyor.yml": policy_text(count)}
    for name in service_names(count):
        for environment in ENVIRONMENTS:
            files[f"apps/{name}/{environment}/kustomization.yaml"] = kustomization(name)
    return files


INSTALLED_MANY = 200  # repositories of the installation in the second world
RESYNC_INTERVAL = 600  # seconds: CONVEYOR_RESYNC_INTERVAL's default


def other_repositories(total: int, count: int) -> list[str]:
    """Repositories that fill the installation up to `total` (with the deployment
    repository and the demo's two sources): three quarters are the source repositories of
    services (`svc-001`…, with no release yet), the rest feed no service."""
    extra = max(0, total - 3)
    sources = min(extra * 3 // 4, count - 1)
    return [*(f"acme/svc-{index:03d}" for index in range(1, sources + 1)),
            *(f"acme/tool-{index:03d}" for index in range(extra - sources))]


async def install_repositories(emulator: Emulator, installation_id: int, names: list[str]
                               ) -> None:
    """Create the repositories and add them to the installation (the event is not sent:
    they were there before the bot started)."""
    for name in names:
        emulator.add_repo(name, files={"README.md": f"# {name}\n"})
    url, emulator.webhook_url = emulator.webhook_url, None
    try:
        await emulator.add_installation_repos(installation_id, names)
    finally:
        emulator.webhook_url = url


def big_manifest(lines: int) -> tuple[str, int]:
    """Deployments of 25 lines each (`---` separated), at least `lines` lines in all; the one
    in the middle uses the web image."""
    documents = []
    count = max(1, -(-lines // 26))
    for index in range(count):
        image = "ghcr.io/acme/web:1.0.0" if index == count // 2 else \
            f"ghcr.io/acme/svc-{index:03d}:1.0.0"
        documents.append(f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{index:03d}
  labels:
    app.kubernetes.io/name: app-{index:03d}
    app.kubernetes.io/part-of: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{index:03d}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{index:03d}
    spec:
      containers:
        - name: app
          image: {image}  # the app
          ports:
            - containerPort: 8080
          env:
            - name: LOG_LEVEL
              value: "info"
""")
    text = "---\n".join(documents)
    return text, text.count("\n")


def timed(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median seconds of `repeats` runs, and the last result."""
    durations = []
    result: Any = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        durations.append(time.perf_counter() - started)
    return median(durations), result


@dataclass
class Costs:
    tallies: dict[str, Tally]
    rate_limit_left: dict[str, int]  # the installation's primary rate limit after each phase
    rate_limit: int
    minimums: dict[str, list[Need]]  # the REST minimum of the release: cold, warm


def installation_requests(stage: Stage) -> Tally:
    """What the emulator served to the installation (its rate limit) and to the app."""
    return tally(stage.emulator.requests.entries)


def rate_limited(measured: Tally) -> int:
    """Requests that count against a primary rate limit: every answer but `304`."""
    return measured.full


async def installation_costs(count: int, installed: int = 3) -> dict[str, Tally]:
    """A fresh bot on a deployment repository of `count` services × 4 environments, in an
    installation of `installed` repositories. The repositories were last pushed a resync
    interval before the bot starts, and the resyncs are that far apart."""
    stage: Stage = await start_stage(files=deployment_files(count))
    tallies: dict[str, Tally] = {}
    try:
        installation_id = stage.demo.installation_id
        await install_repositories(stage.emulator, installation_id,
                                   other_repositories(installed, count))
        stage.clock.advance(RESYNC_INTERVAL)
        await start_bot(stage)
        assert stage.bot is not None
        capabilities = stage.bot.conveyor.capabilities
        ctx = capabilities.ctx
        stage.emulator.reset_counters()
        await resync_all(capabilities.resync)  # what the periodic resync does first after a start
        tallies["cold"] = await measure_quiet(stage)
        gh = await ctx.clients.installation(installation_id)
        [repo] = [r for r in await capabilities.policies.load(gh, installation_id) if r.policy]
        stage.emulator.reset_counters()
        await refresh_dashboard(capabilities.dashboards, gh, repo)
        tallies["dashboard_unchanged"] = installation_requests(stage)
        since = stage.hold()  # a person bumps one service by hand; its push is held
        path = "apps/svc-001/staging/kustomization.yaml" if count > 1 else \
            "apps/web/staging/kustomization.yaml"
        text = stage.emulator.file(stage.repo, path)
        assert text is not None
        await stage.emulator.push_files(stage.repo, {path: text.replace('"0.9.0"', '"0.9.1"')},
                                        author="bob", message="One service by hand")
        stage.emulator.reset_counters()
        await refresh_dashboard(capabilities.dashboards, gh, repo)
        tallies["dashboard_one_change"] = installation_requests(stage)
        await stage.replay_held(since)
        tallies["idle"], _ = await idle_resync(stage, interval=RESYNC_INTERVAL)
    finally:
        await stage.stop()
    return tallies


async def release_costs(count: int) -> Costs:
    """One release of `web` (cold, then warm) in a repository of `count` services, with the
    installation's rate limit (5,000 an hour, as on GitHub) left after each phase."""
    stage: Stage = await start_stage(files=deployment_files(count))
    key = f"installation:{stage.demo.installation_id}"
    tallies: dict[str, Tally] = {}
    left: dict[str, int] = {}
    try:
        await stage.publish_image("web", "1.1.0")
        since, first = await hold_release(stage, "web", "1.1.0")
        await start_bot(stage, forward=False)
        tallies["cold"] = await deliver_alone(stage, first)
        left["cold"] = stage.emulator.rate_limits.remaining(key)
        stage.emulator.reset_counters()
        await stage.replay_held(since)
        tallies["cold_caused"] = await measure_quiet(stage)
        left["cold_caused"] = stage.emulator.rate_limits.remaining(key)
        await stage.publish_image("web", "1.2.0")
        await stage.quiesce()
        since, second = await hold_release(stage, "web", "1.2.0")
        tallies["warm"] = await deliver_alone(stage, second)
        left["warm"] = stage.emulator.rate_limits.remaining(key)
        stage.emulator.reset_counters()
        await stage.replay_held(since)
        tallies["warm_caused"] = await measure_quiet(stage)
        left["warm_caused"] = stage.emulator.rate_limits.remaining(key)
        minimums = {"cold": cold_minimum(), "warm": [*RELEASE_TO_PR, *AFTER_PR]}
    finally:
        await stage.stop()
    return Costs(tallies, left, stage.emulator.rate_limits.limit, minimums)


COLD_BUDGET = 100  # requests counting against the rate limit: start + dashboard + resync
WARM_DASHBOARD_BUDGET = 10
IDLE_BUDGET = 50  # all 304


async def run(quick: bool) -> Section:
    many = 20 if quick else 500
    section = Section(f"5. {many} services × 4 environments on one installation")
    repeats = 3 if quick else 10

    costs = await installation_costs(many)
    _installation_rows(section, costs, "3 installed repositories: ")
    installed = INSTALLED_MANY if not quick else 20
    crowded = await installation_costs(many, installed)
    _installation_rows(section, crowded, f"{installed} installed repositories: ")
    replicas = await replicas_resync(deployment_files(many))
    if replicas is None:
        section.add("resync by three replicas on one Redis vs one replica", "not measured",
                    note="redis-server not installed")
    else:
        one, three = replicas
        section.add("resync by three replicas on one Redis vs one replica",
                    f"{three} vs {one} requests", target="the same", ok=three == one)

    few = await release_costs(5)
    lots = await release_costs(many)
    for key, label, slack in (("cold", "one service's release, cold bot", 2),
                              ("warm", "one service's release, warm bot", 0)):
        small, large = few.tallies[key], lots.tallies[key]
        minimum = len(lots.minimums[key])
        within = small.total <= minimum + slack and large.total <= minimum + slack
        section.add(f"{label}: 5 vs {many} services", f"{small.split()} vs {large.split()}",
                    target=f"≤ minimum {minimum} + {slack}" if slack else
                    f"minimum {minimum}", ok=within and large.total == small.total,
                    note=compare(large, lots.minimums[key]).describe())
        caused = f"{key}_caused"
        small, large = few.tallies[caused], lots.tallies[caused]
        left = lots.rate_limit_left[caused]
        notes = [] if large.total <= small.total else \
            [f"+{large.total - small.total} with {many - 5} more services"]
        if left < lots.rate_limit // 20:
            notes.append(f"the installation's {lots.rate_limit}/h rate limit ran out "
                         f"({left} left)")
        section.add("… the webhooks it causes (PR, merge, push: gates, trace, dashboard)",
                    f"{small.split()} vs {large.split()}", note="; ".join(notes))

    text = policy_text(many)
    load_seconds, policy = timed(lambda: load_policy(text), repeats)
    section.add(f"load + validate the policy ({text.count(chr(10))} lines)", ms(load_seconds),
                note=f"median of {repeats}; {len(policy.services)} services, "
                     f"{len(policy.environments)} environments")
    manifest, lines = big_manifest(5000)
    digest = digest_of("web:2.0.0")
    edit_seconds, edit = timed(
        lambda: promote_image(manifest, image="ghcr.io/acme/web", tag="2.0.0", digest=digest,
                              path="apps/all.yaml"), repeats)
    if not edit.changed:
        raise RuntimeError("promote_image changed nothing in the large manifest")
    section.add(f"`promote_image` on a {lines}-line file of {manifest.count('---') + 1} "
                "documents", ms(edit_seconds),
                note=f"median of {repeats}; Conveyor runs it in a worker process, off the event "
                     "loop")
    section.data = {
        "services": many, "environments": len(ENVIRONMENTS), "policy_lines": text.count("\n"),
        "installation": {k: v.as_dict() for k, v in costs.items()},
        "installed_repositories": installed,
        "installation_crowded": {k: v.as_dict() for k, v in crowded.items()},
        "replicas_resync": replicas,
        "load_policy_s": load_seconds, "manifest_lines": lines, "promote_image_s": edit_seconds,
        "requests": {"5": {k: v.as_dict() for k, v in few.tallies.items()},
                     str(many): {k: v.as_dict() for k, v in lots.tallies.items()}},
        "minimum": {key: len(need) for key, need in lots.minimums.items()},
        "rate_limit_left": {"5": few.rate_limit_left, str(many): lots.rate_limit_left},
    }
    return section


def _installation_rows(section: Section, costs: dict[str, Tally], prefix: str) -> None:
    cold = costs["cold"]
    section.add(f"{prefix}cold bot: start + first dashboard + first full resync",
                f"{rate_limited(cold)} counted ({cold.split()})",
                target=f"≤ {COLD_BUDGET}", ok=rate_limited(cold) <= COLD_BUDGET,
                note=_top(cold))
    for key, label in (("dashboard_unchanged", "dashboard refresh, nothing changed"),
                       ("dashboard_one_change", "dashboard refresh after one file changed")):
        measured = costs[key]
        section.add(f"{prefix}{label}", measured.split(), target=f"≤ {WARM_DASHBOARD_BUDGET}",
                    ok=measured.total <= WARM_DASHBOARD_BUDGET, note=_top(measured))
    idle = costs["idle"]
    section.add(f"{prefix}idle resync (10 minutes later)", idle.split(),
                target=f"only 304s, ≤ {IDLE_BUDGET}",
                ok=idle.full == 0 and idle.total <= IDLE_BUDGET, note=_top(idle))


def _top(measured: Tally, shown: int = 4) -> str:
    """The most frequent requests, by route and status."""
    counts = Counter(f"{m} {p.removeprefix('/repos/{owner}/{repo}')} {s}"
                     for m, p, s in measured.requests)
    return ", ".join(f"{n}× {what}" for what, n in counts.most_common(shown))
