"""The gate judges what a gated chart environment runs, whichever file of the chart carries it.

The demo's api chart (`charts/api`: `Chart.yaml`, `values.yaml`, `_helpers.tpl`, templates)
renders each environment with its values file; every pull request here is rendered with the
machine's real Helm (`CONVEYOR_HELM`, else `helm` on the PATH) at its base and head. The
fixture charts pass `helm lint` (tests/render/test_helm_render.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.promotion.resync.reconcile import resync_all
from bot.render.tool import find_helm
from bot.sandbox.demo import DEMO_FILES
from bot.text import unescape_markdown
from tests.flows.test_gate_integrity import evidence_only
from tests.harness import World, close_world, hand_pr, make_world

# CI never skips: a machine without Helm fails these instead.
pytestmark = pytest.mark.skipif(find_helm(None) is None and not os.environ.get("CI"),
                                reason="needs helm")

CHART = "charts/api"
TEMPLATE = f"{CHART}/templates/deployment.yaml"
HELPERS = f"{CHART}/templates/_helpers.tpl"
DEFAULTS = f"{CHART}/values.yaml"
CHART_FILE = f"{CHART}/Chart.yaml"
SUBCHART = f"{CHART}/charts/cache"
SUBCHART_FILES = {
    CHART_FILE: DEMO_FILES[CHART_FILE] + "dependencies:\n  - name: cache\n    version: 0.1.0\n",
    f"{SUBCHART}/Chart.yaml": ("apiVersion: v2\nname: cache\ndescription: An in-memory cache "
                               "beside the api.\ntype: application\nversion: 0.1.0\n"),
    f"{SUBCHART}/values.yaml": "image: ghcr.io/acme/cache:7.2.0\n",
    f"{SUBCHART}/templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-cache
spec:
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}-cache
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}-cache
    spec:
      containers:
        - name: cache
          image: {{ .Values.image | quote }}
""",
}


def summary(run: dict[str, Any]) -> str:
    return f"{run['output']['title']}\n{unescape_markdown(run['output']['summary'])}"


def concluded(world: World, pr: dict[str, Any], conclusion: str, *needles: str) -> str:
    run = world.gate(pr)
    text = summary(run)
    assert run["conclusion"] == conclusion, text
    for needle in needles:
        assert needle in text, text
    return text


async def world_of(files: dict[str, str] | None = None, **settings: Any) -> World:
    return await make_world(files={**DEMO_FILES, **(files or {})}, **settings)


@pytest.fixture
async def charted() -> AsyncIterator[World]:
    built = await world_of(SUBCHART_FILES)
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == []


async def test_a_container_added_to_a_template_is_judged_for_production(charted: World) -> None:
    world = charted
    template = DEMO_FILES[TEMPLATE].replace(
        "        {{- if .Values.metrics.enabled }}",
        "        - name: debug\n          image: docker.io/evil/miner:1.0\n"
        "        {{- if .Values.metrics.enabled }}")
    pr = await hand_pr(world, TEMPLATE, template)
    text = concluded(world, pr, "failure", "docker.io/evil/miner is not under allowed_images",
                     "Deployment api, container debug", "production render")
    assert "no gated environment changed" not in text.lower()


async def test_a_sidecar_turned_on_in_the_default_values_is_judged(charted: World) -> None:
    world = charted
    defaults = DEMO_FILES[DEFAULTS].replace("  enabled: false", "  enabled: true")
    pr = await hand_pr(world, DEFAULTS, defaults)
    concluded(world, pr, "failure", "container metrics", "ghcr.io/acme/metrics-exporter")


async def test_a_helper_that_renames_the_image_is_judged(charted: World) -> None:
    world = charted
    helpers = DEMO_FILES[HELPERS].replace('printf "%s:%s" .repository .tag',
                                          'printf "docker.io/evil/api:%s" .tag')
    pr = await hand_pr(world, HELPERS, helpers)
    concluded(world, pr, "failure", "docker.io/evil/api", "container api")


async def test_a_vendored_subcharts_new_image_is_judged(charted: World) -> None:
    world = charted
    pr = await hand_pr(world, f"{SUBCHART}/values.yaml", "image: docker.io/evil/cache:7.2.1\n")
    concluded(world, pr, "failure", "docker.io/evil/cache", "Deployment api-cache, container "
              "cache")


async def test_a_harmless_default_passes_without_evidence_or_approval(charted: World) -> None:
    world = charted
    pr = await hand_pr(world, DEFAULTS, DEMO_FILES[DEFAULTS].replace("port: 8080",
                                                                      "port: 8081"))
    text = concluded(world, pr, "success",
                     "`charts/api` renders with every workload's image unchanged")
    assert "no approvals required" in text


async def test_a_default_every_environment_overrides_changes_no_gated_environment(
        charted: World) -> None:
    """Production sets its own replica count: the rendered resources stay as they were."""
    world = charted
    pr = await hand_pr(world, DEFAULTS, DEMO_FILES[DEFAULTS].replace("replicaCount: 1",
                                                                      "replicaCount: 3"))
    assert world.gate(pr)["output"]["title"] == "No gated environment changed"


async def test_a_chart_with_dependencies_it_does_not_vendor_fails_closed(charted: World) -> None:
    world = charted
    chart = DEMO_FILES[CHART_FILE] + ("dependencies:\n  - name: redis\n    version: 19.0.0\n"
                                      "    repository: https://charts.example.com/bitnami\n")
    pr = await hand_pr(world, CHART_FILE, chart)
    concluded(world, pr, "failure", "depends on `redis` from https://charts.example.com/bitnami",
              "not vendored", "Conveyor does not fetch chart dependencies")


async def test_a_template_that_does_not_render_fails_with_helms_message(charted: World) -> None:
    world = charted
    pr = await hand_pr(world, TEMPLATE, DEMO_FILES[TEMPLATE] + "{{ .Values.nothing.here }}\n")
    concluded(world, pr, "failure", "production render", "nil pointer evaluating")


# -- promotions ------------------------------------------------------------------------------
async def test_a_chart_promotion_lists_the_workloads_whose_image_it_changes(
        world: World) -> None:
    digest = await world.release("api", "1.0.0")
    pr = world.pull("Promote api 1.0.0 to staging")
    body = unescape_markdown(pr["body"])
    assert "Rendering the chart charts/api with this change" in body, body
    assert ("| Deployment api, container api | ghcr.io/acme/api:0.9.0 | "
            f"ghcr.io/acme/api:1.0.0@{digest} |") in body, body


async def test_a_chart_promotion_that_changes_no_workload_is_refused() -> None:
    """The template runs a fixed image: the values file's image block is read by nothing."""
    template = DEMO_FILES[TEMPLATE].replace('{{ include "api.image" .Values.image | quote }}',
                                            '"ghcr.io/acme/api:0.9.0"')
    world = await world_of({TEMPLATE: template})
    try:
        await world.release("api", "1.10.0")
        assert [pr["title"] for pr in world.emulator.pulls(world.repo)] == []
        sha = world.emulator.commit("acme/api", "v1.10.0")["sha"]
        runs = world.emulator.check_runs("acme/api", sha, "conveyor/promotion (staging)")
        assert [run["conclusion"] for run in runs] == ["failure"]
        assert "the render of the chart `charts/api` runs the same images" in \
            runs[0]["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_train_lists_the_workloads_of_the_chart_it_renders() -> None:
    world = await world_of({".github/conveyor.yml": evidence_only()})
    try:
        for service in ("web", "api"):
            await world.release(service, "1.0.0")
            assert world.pull(f"Promote {service} 1.0.0 to staging")["merged"]
        created = await world.emulator.open_issue(world.repo, "Release", author="alice")
        await world.settle()
        await world.emulator.comment(world.repo, int(created["number"]), "alice",
                                     "/promote production storefront")
        await world.settle()
        [train] = [pr for pr in world.open_pulls() if pr["title"].startswith("Promote store")]
        body = unescape_markdown(train["body"])
        digest = world.published["api:1.0.0"]
        assert "Rendering the chart charts/api with this change" in body, body
        assert ("| Deployment api, container api | ghcr.io/acme/api:0.9.0 | "
                f"ghcr.io/acme/api:1.0.0@{digest} |") in body, body
        assert "Building apps/web/overlays/prod with this change" in body, body
    finally:
        await close_world(world)
    assert world.emulator.violations == []


# -- the config check ------------------------------------------------------------------------
async def test_a_chart_that_does_not_render_is_annotated_on_each_values_file(
        charted: World) -> None:
    world = charted
    pr = await hand_pr(world, TEMPLATE, DEMO_FILES[TEMPLATE] + "{{ .Values.nothing.here }}\n")
    [run] = world.emulator.check_runs(world.repo, pr["head"]["sha"], "conveyor/config-check")
    assert run["conclusion"] == "failure"
    messages = {a["path"]: a["message"] for a in run["output"]["annotations"]}
    for env in ("staging", "production"):
        message = messages[f"charts/api/values-{env}.yaml"]
        assert message.startswith(f"the {env} render of charts/api fails: "), message
        assert "nil pointer" in message


# -- without Helm ----------------------------------------------------------------------------
async def test_without_helm_a_values_file_is_judged_as_a_file_and_a_template_fails() -> None:
    world = await world_of(helm=None)
    try:
        values = DEMO_FILES["charts/api/values-production.yaml"].replace("replicaCount: 4",
                                                                         "replicaCount: 5")
        pr = await hand_pr(world, "charts/api/values-production.yaml", values,
                           branch="hand/replicas", title="More replicas")
        text = concluded(world, pr, "success", "`charts/api` is not rendered: chart rendering "
                         "is off (no helm)")
        assert "no approvals required" in text
        template = DEMO_FILES[TEMPLATE].replace("containerPort:", "containerPort: ")
        pr = await hand_pr(world, TEMPLATE, template)
        concluded(world, pr, "failure", f"`{TEMPLATE}` changes the chart, and chart rendering "
                  "is off (no helm)")
        async with aiohttp.ClientSession() as session, session.get(
                f"{world.bot.base_url}/healthz") as resp:
            health = await resp.json()
        assert health["chart_rendering"].startswith("off (no helm")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


# -- Kustomize helmCharts --------------------------------------------------------------------
PROD_OVERLAY = "apps/web/overlays/prod"
INFLATING = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
helmGlobals:
  chartHome: charts
helmCharts:
  - name: api
    releaseName: api
    valuesInline:
      replicaCount: 2
images:
  - name: ghcr.io/acme/web
    newTag: "0.9.0"  # promoted by Conveyor
"""


async def test_a_local_chart_a_kustomization_inflates_is_rendered_with_helm() -> None:
    chart = {f"{PROD_OVERLAY}/charts/api/{path.removeprefix('charts/api/')}": text
             for path, text in DEMO_FILES.items() if path.startswith("charts/api/")
             and "/values-" not in path}
    world = await world_of({**chart, f"{PROD_OVERLAY}/kustomization.yaml": INFLATING})
    try:
        template = f"{PROD_OVERLAY}/charts/api/templates/deployment.yaml"
        attack = DEMO_FILES[TEMPLATE].replace("ghcr.io/acme/api", "docker.io/evil/api").replace(
            '{{ include "api.image" .Values.image | quote }}', '"docker.io/evil/api:1.0"')
        pr = await hand_pr(world, template, attack)
        concluded(world, pr, "failure", "docker.io/evil/api is not under allowed_images",
                  "Deployment api, container api", "production build")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


# -- the rendered diff -----------------------------------------------------------------------
SECRET_TEMPLATE = f"{CHART}/templates/secret.yaml"
SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "api.fullname" . }}-credentials
stringData:
  password: {{ .Values.password | default "correct-horse-battery" | quote }}
"""


async def test_the_gate_shows_what_the_cluster_will_run_differently() -> None:
    world = await world_of({SECRET_TEMPLATE: SECRET})
    try:
        template = DEMO_FILES[TEMPLATE].replace(
            "          imagePullPolicy:", "          env:\n            - name: MODE\n"
            "              value: fast\n          imagePullPolicy:")
        values = DEMO_FILES["charts/api/values-production.yaml"] + 'password: "hunter2-secret"\n'
        await world.emulator.push_files(world.repo, {TEMPLATE: template,
                                                     "charts/api/values-production.yaml": values,
                                                     f"{CHART}/templates/config.yaml": (
                                                         "apiVersion: v1\nkind: ConfigMap\n"
                                                         "metadata:\n  name: api-settings\n"
                                                         "data:\n  mode: fast\n")},
                                        branch="hand/mode", message="Fast mode")
        await world.emulator.open_pull(world.repo, "hand/mode", title="Fast mode",
                                       author="alice")
        await world.settle()
        run = world.gate(world.pull("Fast mode", state="open"))
        text = run["output"]["text"]
        assert "## What the cluster will run differently" in text, text
        assert "### production: chart `charts/api`" in text, text
        assert "- added: `ConfigMap api-settings`" in text
        assert "- changed: `Deployment api`" in text
        assert "+          value: fast" in text or "+        - name: MODE" in text, text
        assert "# the value of stringData.password changes (masked)" in text, text
        assert "hunter2" not in text and "correct-horse" not in text
        assert "(masked)" in text
    finally:
        await close_world(world)
    assert world.emulator.violations == []


BIG = f"{CHART}/templates/big.yaml"
BIG_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: big
data:
{{- range $i := until 4000 }}
  key{{ $i }}: {{ printf "%s-%d" $.Values.service.port $i | quote }}
{{- end }}
"""


async def test_a_diff_past_githubs_limit_is_cut_with_a_note(charted: World) -> None:
    world = charted
    await world.emulator.push_files(world.repo, {BIG: BIG_TEMPLATE}, message="A big map")
    await world.settle()
    pr = await hand_pr(world, DEFAULTS, DEMO_FILES[DEFAULTS].replace("port: 8080", "port: 8081"))
    text = world.gate(pr)["output"]["text"]
    assert len(text.encode()) <= 65_535
    assert "- changed: `ConfigMap big`" in text
    assert text.rstrip().endswith("more lines not shown.") and "cut to GitHub's output limit" \
        in text, text[-300:]
    body = text.split("## What the cluster will run differently", 1)[1]
    assert body.count("```") % 2 == 0  # the cut closes the code block it leaves open


# -- overlapping environments ----------------------------------------------------------------
def layout(name: str) -> dict[str, str]:
    root = Path(__file__).resolve().parents[1] / "data" / "layouts" / name
    return {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
            for path in root.rglob("*") if path.is_file()}


async def test_a_staging_promotion_into_the_charts_defaults_names_production() -> None:
    """argocd-example-apps' helm-guestbook: staging's file is the chart's values.yaml, which
    production's render reads too. The promotion says so, the gate judges production's
    render, and Conveyor does not merge it into staging behind production's back."""
    world = await make_world(files=layout("guestbook-helm"), source_repos=("acme/guestbook",))
    try:
        digest = await world.release("guestbook", "1.1.0")
        pr = world.pull("Promote guestbook 1.1.0 to staging")
        assert pr["state"] == "open" and not pr["merged"]
        body = unescape_markdown(pr["body"])
        assert "This file is also read by the render of **production** (helm-guestbook)" \
            in body, body
        # each environment renders as its Application says: the Application's name is the
        # release (argocd/guestbook-<env>.yaml)
        for env in ("staging", "production"):
            assert (f"| Deployment guestbook-{env}-helm-guestbook, container helm-guestbook | "
                    f"ghcr.io/acme/guestbook:1.0.0 | ghcr.io/acme/guestbook:1.1.0@{digest} |") \
                in body, body
        gate = world.gate(pr)
        text = summary(gate)
        assert gate["conclusion"] == "failure", text
        assert "production render" in text and "guestbook → production" in text, text
    finally:
        await close_world(world)
    assert world.emulator.violations == []


def packaged_subchart(tmp_path: Path, image: str) -> bytes:
    """The cache subchart as `helm dependency build` vendors it: a packaged archive."""
    helm = find_helm(None)
    assert helm is not None
    source = tmp_path / f"cache-{abs(hash(image))}"
    for path, text in SUBCHART_FILES.items():
        if path.startswith(SUBCHART):
            target = source / path.removeprefix(SUBCHART + "/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.replace("ghcr.io/acme/cache:7.2.0", image), encoding="utf-8")
    out = tmp_path / f"out-{abs(hash(image))}"
    subprocess.run([helm.executable, "package", str(source), "--destination", str(out)],
                   check=True, capture_output=True)
    return (out / "cache-0.1.0.tgz").read_bytes()


async def test_a_packaged_subcharts_new_image_is_judged(tmp_path: Path) -> None:
    world = await world_of({CHART_FILE: SUBCHART_FILES[CHART_FILE]})
    try:
        archive = f"{CHART}/charts/cache-0.1.0.tgz"
        await world.emulator.push_files(world.repo, {
            archive: packaged_subchart(tmp_path, "ghcr.io/acme/cache:7.2.0")},
            message="Vendor the cache chart")
        await world.settle()
        await world.emulator.push_files(world.repo, {
            archive: packaged_subchart(tmp_path, "docker.io/evil/cache:7.2.1")},
            branch="hand/cache", message="Bump the cache")
        await world.emulator.open_pull(world.repo, "hand/cache", title="Bump the cache",
                                       author="alice")
        await world.settle()
        concluded(world, world.pull("Bump the cache", state="open"), "failure",
                  "docker.io/evil/cache is not under allowed_images",
                  "Deployment api-cache, container cache")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_promotion_into_a_chart_that_does_not_render_says_so_and_opens() -> None:
    """The render is no reason to refuse: the PR body says why it could not be compared, and
    the gate judges what it cannot render."""
    world = await world_of({TEMPLATE: DEMO_FILES[TEMPLATE] + "{{ .Values.nothing.here }}\n"})
    try:
        await world.release("api", "1.0.0")
        body = unescape_markdown(world.pull("Promote api 1.0.0 to staging")["body"])
        assert "> Rendering the chart charts/api could not be compared: " in body, body
        assert "nil pointer" in body
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_the_resync_leaves_open_a_staging_promotion_whose_gate_fails() -> None:
    """The staging promotion that reaches production's render and was left open: the resync's
    pass over auto-merges that did not happen judges it by its gate too, and leaves it open."""
    world = await make_world(files=layout("guestbook-helm"), source_repos=("acme/guestbook",))
    try:
        await world.release("guestbook", "1.1.0")
        assert not world.pull("Promote guestbook 1.1.0 to staging")["merged"]
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        pr = world.pull("Promote guestbook 1.1.0 to staging")
        assert pr["state"] == "open" and not pr["merged"]
        assert world.gate(pr)["conclusion"] == "failure"
    finally:
        await close_world(world)
    assert world.emulator.violations == []
