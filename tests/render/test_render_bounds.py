"""The rendering edge on its own: which kustomize, the bounds of one build, and what a build
reads (the flows in tests/flows/test_gate_builds.py run the real kustomize end to end)."""

from __future__ import annotations

import asyncio

import pytest

from bot.render import inputs as inputs_module
from bot.render.build import Builder, KustomizeJob
from bot.render.inputs import BuildInputs, NeedTexts, TreeIndex, build_inputs
from bot.render.tool import Kustomize, find_kustomize, rendering_text
from bot.render.workloads import Slot, UnreadableBuild, image_changes, read_output


def which_of(*present: str):  # type: ignore[no-untyped-def]
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_which_kustomize() -> None:
    assert find_kustomize(None, which_of("kustomize", "kubectl")) == Kustomize(
        ("kustomize", "build"))
    assert find_kustomize("", which_of("kubectl")) == Kustomize(("kubectl", "kustomize"))
    assert find_kustomize(None, which_of()) is None
    assert find_kustomize("off", which_of("kustomize")) is None
    assert find_kustomize("/opt/k/kustomize build", which_of("/opt/k/kustomize")) == Kustomize(
        ("/opt/k/kustomize", "build"))
    with pytest.raises(ValueError, match="nowhere is not an executable on the PATH"):
        find_kustomize("nowhere build", which_of())
    with pytest.raises(ValueError, match="cannot be split into words"):
        find_kustomize("'kustomize build", which_of("kustomize"))
    assert rendering_text(None).startswith("off (no kustomize")
    assert rendering_text(Kustomize(("kubectl", "kustomize"))) == "on (kubectl kustomize)"


def shell(script: str) -> Kustomize:
    """A stand-in for kustomize: the build's own arguments follow as $0, $1…"""
    return Kustomize(("sh", "-c", script))


async def test_a_build_past_its_time_is_killed() -> None:
    result = await Builder(shell("sleep 30"), timeout=0.3).build("k", KustomizeJob("o"),
                                                                {"o/k.yaml": "x"})
    assert result.images is None and result.error == "kustomize did not finish within 0.3 s"


async def test_a_build_printing_past_its_cap_is_stopped() -> None:
    builder = Builder(shell("yes apiVersion: v1 | head -c 200000"), max_output=4096)
    result = await builder.build("k", KustomizeJob("o"), {})
    assert result.error == "the render printed more than 4096 bytes"


async def test_kustomizes_message_is_the_error_without_the_private_copys_paths() -> None:
    script = ('echo "E1202 01:06:28.339052 5881 run.go:72] \\"command failed\\" '
              'err=\\"accumulating resources from $2/missing.yaml\\"" >&2; exit 1')
    result = await Builder(shell(script)).build("k", KustomizeJob("apps/web"),
                                               {"apps/web/a.yaml": "a: 1\n"})
    assert result.error == "accumulating resources from apps/web/missing.yaml"


async def test_the_build_runs_without_network_and_in_a_home_of_its_own() -> None:
    result = await Builder(shell('echo "$HTTPS_PROXY $http_proxy $HOME" >&2; exit 3')).build(
        "k", KustomizeJob(""), {})
    assert result.error is not None
    proxies, home = result.error.rsplit(" ", 1)
    assert proxies == "http://127.0.0.1:9 http://127.0.0.1:9" and home == "home"


async def test_output_that_is_not_yaml_is_an_error_not_a_crash() -> None:
    result = await Builder(shell("printf '{'")).build("k", KustomizeJob(""), {})
    assert result.error == ("the render's output is not YAML: line 2, column 1: did not find "
                            "expected node content")
    control = await Builder(shell("printf 'a: \\007'")).build("k", KustomizeJob(""), {})
    assert control.error == ("the render's output is not YAML: unacceptable character #x0007: "
                             "control characters are not allowed")


async def test_the_same_inputs_asked_twice_at_once_are_built_once() -> None:
    builder = Builder(shell("sleep 0.2; printf 'kind: Pod\\nmetadata: {name: p}\\n"
                            "spec:\\n  containers:\\n  - {name: c, image: \"a:1\"}\\n'"))
    first, second = await asyncio.gather(builder.build("same", KustomizeJob(""), {}),
                                         builder.build("same", KustomizeJob(""), {}))
    assert first == second and (builder.runs, builder.hits) == (1, 1)
    assert dict(first.images or {}) == {Slot("Pod", "", "p", "container c"): "a:1"}
    await builder.build("same", KustomizeJob(""), {})
    assert (builder.runs, builder.hits) == (1, 2)


def walk(files: dict[str, str], overlay: str) -> BuildInputs:
    index = TreeIndex({path: len(text) for path, text in files.items()})
    texts: dict[str, str | None] = {}
    while isinstance(found := build_inputs(index, overlay, texts), NeedTexts):
        texts.update({path: files[path] for path in found.paths})
    return found


def test_what_a_build_cannot_read_is_said() -> None:
    files = {
        "a/kustomization.yaml": ("resources:\n  - ../../../outside\n  - ../b\n  - /etc\n"
                                 "helmCharts:\n  - name: redis\n    repo: https://charts.example\n"
                                 "helmChartInflationGenerator: []\n"),
        "b/deployment.yaml": "kind: Deployment\n",
    }
    found = walk(files, "a")
    assert found.roots == ("a", "b")
    assert any("outside the repository" in p and "../../../outside" in p
               for p in found.problems)
    assert any("`/etc`, outside the repository" in p for p in found.problems)
    assert any("`b` has no kustomization file" in p for p in found.problems)
    assert any("inflates the chart `redis` from https://charts.example, which Conveyor does "
               "not fetch" in p for p in found.problems)
    assert any("uses `helmChartInflationGenerator`" in p for p in found.problems)
    assert found.inflates


def test_an_unreadable_kustomization_is_left_to_kustomize(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    found = walk({"a/kustomization.yaml": "resources: [unclosed\n"}, "a")
    assert found.problems == () and found.roots == ("a",)
    monkeypatch.setattr(inputs_module, "MAX_BUILD_FILES", 2)
    many = {"a/kustomization.yaml": "resources: []\n", **{f"a/{n}.yaml": "x" for n in "xyz"}}
    assert walk(many, "a").problems == ("the build of `a` reads 4 files, more than 2",)
    monkeypatch.setattr(inputs_module, "MAX_BUILD_BYTES", 3)
    assert "reads more than 0 MB" in walk({"a/kustomization.yaml": "resources: []\n"},
                                          "a").problems[0]


def test_every_pod_spec_of_a_resource_and_its_image_volumes() -> None:
    output = """\
kind: Workflow
metadata: {name: w, namespace: ci}
spec:
  templates:
    - {containers: [{name: build, image: 'b:1'}]}
    - {containers: [{name: test, image: 't:1'}], volumes: [{name: m, image: {reference: 'm:1'}}]}
---
just a string
---
kind: ConfigMap
metadata: {name: c}
"""
    found, resources = read_output(output)
    assert resources.count == 2
    assert found == {
        Slot("Workflow", "ci", "w", "container build (spec.templates[0])"): "b:1",
        Slot("Workflow", "ci", "w", "container test (spec.templates[1])"): "t:1",
        Slot("Workflow", "ci", "w", "image volume m (spec.templates[1])"): "m:1",
    }
    assert str(next(iter(found))) == "Workflow ci/w, container build (spec.templates[0])"
    changes = image_changes({}, found)
    assert str(changes[0]).endswith("(new) → b:1")
    with pytest.raises(UnreadableBuild):
        read_output("a: [")
