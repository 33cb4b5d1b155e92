"""5. Scale: a large policy, one service's release among many, a large multi-document manifest.

- `load_policy` (parse + validate) of a policy with N services × 4 environments;
- the GitHub requests one service's release costs with few and with many services in the same
  deployment repository (two worlds, same run): the release delivery alone must not grow with
  the number of services; the webhooks that promotion causes are counted too, because the
  dashboard refresh they schedule reads every service's files;
- `promote_image` on a 5,000-line file of many YAML documents.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.domain.policy import load_policy
from bot.manifests import promote_image
from bot.sandbox.demo import digest_of

from .counting import Tally
from .report import Section, median, ms
from .requests_per_promotion import deliver_alone, hold_release, measure_quiet
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
    finally:
        await stage.stop()
    return Costs(tallies, left, stage.emulator.rate_limits.limit)


async def run(quick: bool) -> Section:
    many = 20 if quick else 500
    section = Section(f"5. Scale: {many} services × 4 environments")
    repeats = 3 if quick else 10

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
                "documents", ms(edit_seconds), note=f"median of {repeats}")

    few = await release_costs(5)
    lots = await release_costs(many)
    for key, label, bounded in (
        ("cold", "one service's release, cold bot", True),
        ("cold_caused", "… the webhooks it causes (PR, merge, push: gates, trace, dashboard)",
         False),
        ("warm", "one service's release, warm bot", True),
        ("warm_caused", "… the webhooks it causes", False),
    ):
        small, large = few.tallies[key], lots.tallies[key]
        notes = [] if large.total <= small.total else \
            [f"+{large.total - small.total} with {many - 5} more services"]
        left = lots.rate_limit_left[key]
        if left < lots.rate_limit // 20:
            notes.append(f"the installation's {lots.rate_limit}/h rate limit ran out "
                         f"({left} left)")
        section.add(f"{label}: 5 vs {many} services", f"{small.split()} vs {large.split()}",
                    target="no growth" if bounded else "",
                    ok=large.total <= small.total if bounded else None,
                    note="; ".join(notes))
    section.data = {
        "services": many, "environments": len(ENVIRONMENTS), "policy_lines": text.count("\n"),
        "load_policy_s": load_seconds, "manifest_lines": lines, "promote_image_s": edit_seconds,
        "requests": {"5": {k: v.as_dict() for k, v in few.tallies.items()},
                     str(many): {k: v.as_dict() for k, v in lots.tallies.items()}},
        "rate_limit_left": {"5": few.rate_limit_left, str(many): lots.rate_limit_left},
    }
    return section
