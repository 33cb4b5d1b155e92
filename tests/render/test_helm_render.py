"""Helm on its own: which Helm, the command one chart render runs, its bounds, what a chart
render reads, and the real Helm on the fixture charts (`helm lint`, `helm template`), also
inflating a Kustomize overlay's local `helmCharts`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.render.build import Builder, HelmJob, KustomizeJob, ManifestsJob
from bot.render.charts import chart_folder, chart_inputs, value_file_path
from bot.render.inputs import TreeIndex
from bot.render.reads import RenderInputs, render_inputs
from bot.render.targets import ChartTarget, FolderTarget, OverlayTarget, option_text
from bot.render.tool import Helm, Kustomize, chart_rendering_text, find_helm, find_kustomize
from bot.render.workloads import Slot
from bot.sandbox.demo import DEMO_FILES
from tests.flows.test_gate_charts import SUBCHART_FILES

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = ROOT / "tests" / "data" / "layouts"
HELM = find_helm(None)
KUSTOMIZE = find_kustomize(None)
# CI never skips: a machine without Helm fails these instead.
needs_helm = pytest.mark.skipif(HELM is None and not os.environ.get("CI"), reason="needs helm")


def which_of(*present: str):  # type: ignore[no-untyped-def]
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_which_helm() -> None:
    assert find_helm(None, which_of("helm")) == Helm("/usr/bin/helm")
    assert find_helm("", which_of()) is None
    assert find_helm("off", which_of("helm")) is None
    assert find_helm("helm4", which_of("helm4")) == Helm("/usr/bin/helm4")
    with pytest.raises(ValueError, match="nowhere is not an executable on the PATH"):
        find_helm("nowhere", which_of())
    with pytest.raises(ValueError, match="without arguments"):
        find_helm("helm --debug", which_of("helm"))
    assert chart_rendering_text(None).startswith("off (no helm")
    assert chart_rendering_text(Helm("/usr/bin/helm")) == "on (/usr/bin/helm template)"


def fake_helm(tmp_path: Path, script: str) -> Helm:
    """A stand-in for Helm: a script of its own, handed the render's arguments."""
    path = tmp_path / "helm"
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(0o755)
    return Helm(str(path))


async def test_the_values_go_to_helm_in_helms_order(tmp_path: Path) -> None:
    helm = fake_helm(tmp_path, 'for a in "$@"; do echo "$a"; done >&2; cat "${12}" >&2; exit 1')
    job = HelmJob("charts/api", "api", "production", ("charts/api/values-prod.yaml",
                                                        "envs/prod.yaml"),
                  inline="replicaCount: 9\n", parameters=(("image.tag", "1,2", False),
                                                          ("name", "x", True)))
    result = await Builder(None, helm).build("k", job, {"charts/api/Chart.yaml": "name: api\n"})
    assert result.error is not None
    words = result.error.split()
    assert words[:6] == ["template", "api", "charts/api", "--namespace", "production",
                         "--include-crds"]
    assert words[6:12] == ["--values", "charts/api/values-prod.yaml", "--values",
                           "envs/prod.yaml", "--values", "inline-values.yaml"]
    assert words[12:] == ["--set", "image.tag=1\\,2", "--set-string", "name=x",
                          "replicaCount:", "9"]


async def test_flux_values_files_replace_the_charts_own_defaults(tmp_path: Path) -> None:
    helm = fake_helm(tmp_path, 'echo "$5 $8" >&2; cat "$3/values.yaml" "$8" >&2; exit 1')
    job = HelmJob("charts/api", "api", "prod", ("charts/api/values.yaml",),
                  replace_defaults=True)
    result = await Builder(None, helm).build("k", job, {"charts/api/values.yaml": "a: 1\n"})
    assert result.error == "prod chart-values.yaml {} a: 1"


async def test_helm_runs_without_plugins_network_or_cluster(tmp_path: Path) -> None:
    helm = fake_helm(tmp_path, 'ls -A "$HELM_PLUGINS" >&2; echo "plugins:$HELM_PLUGINS '
                               '$HTTPS_PROXY $KUBECONFIG" >&2; exit 2')
    result = await Builder(None, helm).build("k", HelmJob("", "r", "n"), {})
    assert result.error == "plugins:plugins http://127.0.0.1:9 home/no-kubeconfig"


async def test_a_helm_render_past_its_time_or_output_is_stopped(tmp_path: Path) -> None:
    slow = await Builder(None, fake_helm(tmp_path, "sleep 30"), timeout=0.3).build(
        "k", HelmJob("", "r", "n"), {})
    assert slow.error == "helm did not finish within 0.3 s"
    loud = await Builder(None, fake_helm(tmp_path, "yes kind: Pod | head -c 100000"),
                         max_output=2048).build("k", HelmJob("", "r", "n"), {})
    assert loud.error == "the render printed more than 2048 bytes"


async def test_a_render_whose_tool_is_off_says_so_without_running() -> None:
    builder = Builder(None, None)
    assert (await builder.build("a", HelmJob("c", "r", "n"), {})).error == (
        "chart rendering is off (no helm): the chart cannot be rendered")
    assert "rendering is off (no kustomize)" in str(
        (await builder.build("b", KustomizeJob("o"), {})).error)
    assert "chart rendering is off" in str(
        (await Builder(Kustomize(("kustomize", "build")), None).build(
            "c", KustomizeJob("o", inflates=True), {})).error)
    assert builder.runs == 0


async def test_plain_manifests_are_read_without_a_tool() -> None:
    builder = Builder(None, None)
    files = {"m/a.yaml": "kind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n"
                         "    - {name: c, image: 'x:1'}\n", "m/b.json": '{"kind": "Service"}'}
    result = await builder.build("k", ManifestsJob("m", ("m/a.yaml", "m/b.json")), files)
    assert dict(result.images or {}) == {Slot("Pod", "", "a", "container c"): "x:1"}
    assert result.resources is not None and result.resources.count == 2
    refused = await builder.build("b", ManifestsJob("m", ("m/z.yaml",)), {"m/z.yaml": b"\xff"})
    assert refused.error == "a manifest is not UTF-8 text"
    assert "not YAML" in str((await builder.build("c", ManifestsJob("m", ("m/a.yaml",)),
                                                  {"m/a.yaml": "a: ["})).error)
    small = Builder(None, None, max_output=10)
    assert "add up to more than 10 bytes" in str(
        (await small.build("d", ManifestsJob("m", ("m/a.yaml",)), files)).error)


def index_of(files: dict[str, str]) -> TreeIndex:
    return TreeIndex({path: len(text) for path, text in files.items()})


def test_an_environments_chart_is_the_nearest_chart_above_its_values_file() -> None:
    index = index_of({**DEMO_FILES, **SUBCHART_FILES})
    assert chart_folder(index, "charts/api/values-production.yaml") == "charts/api"
    assert chart_folder(index, "charts/api/env/prod/values.yaml") == "charts/api"
    assert chart_folder(index, "charts/api/Chart.yaml") is None
    assert chart_folder(index, "charts/api/templates/deployment.yaml") is None
    assert chart_folder(index, "charts/api/charts/cache/values.yaml") == "charts/api/charts/cache"
    assert chart_folder(index, "apps/web/overlays/prod/kustomization.yaml") is None
    assert chart_folder(index, "charts/api/NOTES.txt") is None
    assert chart_folder(index_of({"Chart.yaml": "", "values-prod.yaml": ""}),
                        "values-prod.yaml") == ""


def test_what_a_chart_render_reads() -> None:
    files = {**DEMO_FILES, **SUBCHART_FILES, "envs/prod.yaml": "replicaCount: 3\n"}
    index = index_of(files)
    target = ChartTarget("charts/api", ("charts/api/values-production.yaml", "envs/prod.yaml"),
                         "api", "production")
    found = render_inputs(index, target, {"charts/api/Chart.yaml": files["charts/api/Chart.yaml"]})
    assert isinstance(found, RenderInputs) and found.problems == ()
    assert "charts/api/charts/cache/templates/deployment.yaml" in found.files
    assert "envs/prod.yaml" in found.files and "charts/web/x" not in found.files
    assert found.reads("charts/api/templates/_helpers.tpl") and found.reads("envs/prod.yaml")
    assert found.reads("charts/api/values-staging.yaml")
    assert not found.takes("charts/api/values-staging.yaml")
    assert found.takes("charts/api/values.yaml") and not found.reads("apps/web/base/x.yaml")
    missing = chart_inputs(index, "charts/none", ("charts/none/v.yaml",), None)
    assert missing.problems == ("`charts/none` holds no Chart.yaml: it is not a chart",
                                "the values file `charts/none/v.yaml` does not exist")
    assert value_file_path("charts/api", "https://example.com/v.yaml") is None
    assert value_file_path("charts/api", "../../../etc/passwd") is None
    assert value_file_path("charts/api", "../../envs/prod.yaml") == "envs/prod.yaml"


def test_a_dependency_is_vendored_by_folder_or_archive() -> None:
    chart = ("apiVersion: v2\nname: api\nversion: 0.1.0\ndependencies:\n"
             "  - name: cache\n    version: 0.1.0\n  - name: redis\n    version: 19.0.0\n"
             "  - name: queue\n    version: 1.0.0\n    repository: oci://ghcr.io/acme/charts\n")
    index = index_of({"api/Chart.yaml": chart, "api/charts/cache/Chart.yaml": "",
                      "api/charts/redis-19.0.0.tgz": ""})
    found = chart_inputs(index, "api", (), chart)
    assert found.problems == ("`api/Chart.yaml` depends on `queue` from oci://ghcr.io/acme/charts,"
                              " which is not vendored under `api/charts/`: Conveyor does not "
                              "fetch chart dependencies",)


def test_a_folder_target_reads_its_manifests() -> None:
    index = index_of({"m/a.yaml": "", "m/b.txt": "", "m/sub/c.yml": "", "n/d.yaml": ""})
    flat = render_inputs(index, FolderTarget("m"), {})
    deep = render_inputs(index, FolderTarget("m", recurse=True), {})
    assert isinstance(flat, RenderInputs) and isinstance(deep, RenderInputs)
    assert flat.files == ("m/a.yaml",) and deep.files == ("m/a.yaml", "m/sub/c.yml")
    assert flat.reads("m/new.yaml") and not flat.reads("n/d.yaml")
    assert option_text({"images": [], "namePrefix": ""}) == ""
    assert OverlayTarget("o", option_text({"namePrefix": "p-"})).describe() == (
        "`o` with the pointer's Kustomize settings")


# -- the real Helm ---------------------------------------------------------------------------
def charts_of_fixtures(tmp_path: Path) -> list[Path]:
    """Every fixture chart: the demo's (with the subchart the flows vendor) and the example
    layouts'."""
    for path, text in {**DEMO_FILES, **SUBCHART_FILES}.items():
        if path.startswith("charts/"):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text, encoding="utf-8")
    return [tmp_path / "charts" / "api",
            *(chart.parent for chart in sorted(LAYOUTS.glob("**/Chart.yaml")))]


@needs_helm
def test_every_fixture_chart_passes_helm_lint_and_renders(tmp_path: Path) -> None:
    assert HELM is not None
    for chart in charts_of_fixtures(tmp_path):
        lint = subprocess.run([HELM.executable, "lint", str(chart)], capture_output=True,
                              text=True, check=False)
        assert lint.returncode == 0, (chart, lint.stdout, lint.stderr)
        rendered = subprocess.run([HELM.executable, "template", "x", str(chart)],
                                  capture_output=True, text=True, check=False)
        assert rendered.returncode == 0 and "image:" in rendered.stdout, (chart, rendered.stderr)


@needs_helm
async def test_the_real_helm_renders_a_chart_and_finds_nothing_in_a_cluster() -> None:
    files = {path: text for path, text in {**DEMO_FILES, **SUBCHART_FILES}.items()
             if path.startswith("charts/api/")}
    files["charts/api/templates/lookup.yaml"] = (
        "{{- $found := lookup \"v1\" \"Secret\" \"default\" \"token\" }}\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: looked\n"
        "data:\n  found: {{ $found | toJson | quote }}\n")
    builder = Builder(None, HELM)
    job = HelmJob("charts/api", "api", "production", ("charts/api/values-production.yaml",))
    result = await builder.build("k", job, files)
    assert result.error is None, result.error
    assert dict(result.images or {}) == {
        Slot("Deployment", "", "api", "container api"): "ghcr.io/acme/api:0.9.0",
        Slot("Deployment", "", "api-cache", "container cache"): "ghcr.io/acme/cache:7.2.0"}
    assert result.resources is not None
    looked = dict(result.resources.items())["ConfigMap looked"]
    assert "found: '{}'" in looked.text


KUSTOMIZE_HELM = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
helmGlobals:
  chartHome: charts
helmCharts:
  - name: api
    releaseName: api
    namespace: production
    valuesInline:
      replicaCount: 2
"""


@needs_helm
async def test_kustomize_inflates_a_local_chart_with_the_same_helm() -> None:
    assert KUSTOMIZE is not None, "the Helm tests need a kustomize too"
    files = {f"apps/api/{path}": text for path, text in DEMO_FILES.items()
             if path.startswith("charts/api/")}
    files["apps/api/kustomization.yaml"] = KUSTOMIZE_HELM
    index = index_of(files)
    found = render_inputs(index, OverlayTarget("apps/api"), files)
    assert isinstance(found, RenderInputs) and found.problems == ()
    assert found.reads("apps/api/charts/api/templates/_helpers.tpl")
    result = await Builder(KUSTOMIZE, HELM).build("k", found.job, files)
    assert result.error is None, result.error
    assert dict(result.images or {}) == {
        Slot("Deployment", "", "api", "container api"): "ghcr.io/acme/api:0.9.0"}


def test_what_a_chart_render_cannot_read_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.render import charts as charts_module
    index = index_of({"Chart.yaml": "", "values.yaml": "", "templates/a.yaml": ""})
    assert chart_inputs(index, "", ("values.yaml",), "dependencies: [7, {version: 1}]\n"
                        ).problems == ()
    assert chart_inputs(index, "", (), "dependencies: [unclosed\n").problems == ()
    assert chart_inputs(index, "", (), "- a list\n").problems == ()
    assert chart_inputs(index, "", (), None).files == ("Chart.yaml", "templates/a.yaml",
                                                        "values.yaml")
    monkeypatch.setattr(charts_module, "MAX_BUILD_FILES", 2)
    assert chart_inputs(index, "", (), None).problems == (
        "the render of `.` reads 3 files, more than 2",)
    monkeypatch.setattr(charts_module, "MAX_BUILD_FILES", 100)
    monkeypatch.setattr(charts_module, "MAX_BUILD_BYTES", 1)
    big = TreeIndex({"Chart.yaml": 5, "values.yaml": 5})
    assert chart_inputs(big, "", (), None).problems == ("the render of `.` reads more than 0 MB",)
