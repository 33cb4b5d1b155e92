"""Many overlays in one kustomize run (`bot/render/batching.py`, `Builder.build_many`): every
result is the overlay's own build, checked against single builds with the real kustomize on
fixtures `kubectl kustomize` builds; the inputs and outputs where a shared run would differ
are built alone."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
from pathlib import Path

import cachetools
import pytest

from bot.render import batching
from bot.render.build import Builder, BuildResult, KustomizeJob, Request, _chunks, _exact_results
from bot.render.inputs import BuildInputs, TreeIndex, build_inputs
from bot.render.tool import Kustomize, find_kustomize
from tests.manifest_texts import ENV_FROM, deployment

# CI never skips: a machine without kustomize fails these instead.
pytestmark = pytest.mark.skipif(find_kustomize(None) is None and not os.environ.get("CI"),
                                reason="needs kustomize or kubectl")

KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


SAFE = {
    # a base two services build with a prefix each, a config map generated with its hash
    "bases/web/kustomization.yaml": KUSTOMIZATION + "resources:\n  - deployment.yaml\n"
    "configMapGenerator:\n  - name: settings\n    literals: [MODE=web]\n",
    "bases/web/deployment.yaml": deployment("web", "ghcr.io/acme/web", ENV_FROM),
    "components/shared/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\n"
    "kind: Component\nlabels:\n  - pairs: {team: core}\n    includeTemplates: true\n",
    "apps/alpha/overlays/prod/kustomization.yaml": KUSTOMIZATION
    + "namespace: alpha\nnamePrefix: alpha-\nresources:\n  - ../../../../bases/web\n"
    "components:\n  - ../../../../components/shared\npatches:\n  - path: replicas.yaml\n"
    "images:\n  - name: ghcr.io/acme/web\n    newName: ghcr.io/acme/alpha\n    newTag: \"1.2.0\"\n",
    "apps/alpha/overlays/prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\n"
    "metadata:\n  name: web\nspec:\n  replicas: 3\n",
    "apps/beta/overlays/prod/kustomization.yaml": KUSTOMIZATION
    + "namespace: beta\nnamePrefix: beta-\nnameSuffix: -v2\nresources:\n"
    "  - ../../../../bases/web\n  - secret.yaml\nsecretGenerator:\n  - name: token\n"
    "    literals: [TOKEN=x]\npatches:\n  - target: {kind: Deployment}\n"
    "    patch: |-\n      - op: replace\n        path: /spec/replicas\n        value: 4\n",
    "apps/beta/overlays/prod/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n"
    "  name: plain\nstringData:\n  key: value\n",
    "apps/gamma/base/kustomization.yaml": KUSTOMIZATION + "resources:\n  - deployment.yaml\n"
    "  - service.yaml\n",
    "apps/gamma/base/deployment.yaml": deployment("gamma", "ghcr.io/acme/gamma"),
    "apps/gamma/base/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: gamma\n"
    "spec:\n  selector: {app: gamma}\n  ports:\n    - port: 80\n",
    "apps/gamma/overlays/prod/kustomization.yaml": KUSTOMIZATION
    + "resources:\n  - ../../base\ncomponents:\n  - ../../../../components/shared\n"
    "commonAnnotations:\n  owner: gamma-team\nreplicas:\n  - name: gamma\n    count: 2\n"
    "images:\n  - name: ghcr.io/acme/gamma\n    digest: sha256:" + "ab" * 32 + "\n",
    "apps/delta/overlays/prod/kustomization.yaml": KUSTOMIZATION
    + "resources:\n  - deployment.yaml\nconfigMapGenerator:\n  - name: delta-settings\n"
    "    files: [app.properties]\n",
    "apps/delta/overlays/prod/deployment.yaml": deployment(
        "delta", "ghcr.io/acme/delta:2.0.0",
        "          volumeMounts: [{name: cfg, mountPath: /etc/delta}]\n"
        "      volumes:\n        - name: cfg\n          configMap:\n"
        "            name: delta-settings\n"),
    "apps/delta/overlays/prod/app.properties": "mode=prod\n---\nnot a separator\n",
    "apps/empty/overlays/prod/kustomization.yaml": KUSTOMIZATION + "resources: []\n",
    # a prefix renames what an ingress, an autoscaler and a binding refer to
    "apps/edge/kustomization.yaml": KUSTOMIZATION + "namePrefix: edge-\nresources:\n"
    "  - ../gamma/base\n  - edge.yaml\n",
    "apps/edge/edge.yaml": """\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: gamma
spec:
  tls: [{hosts: [gamma.example], secretName: gamma-tls}]
  rules:
    - http:
        paths:
          - path: /
            pathType: Prefix
            backend: {service: {name: gamma, port: {number: 80}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: gamma
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: gamma}
  minReplicas: 1
  maxReplicas: 3
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gamma
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: gamma
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
  - kind: ServiceAccount
    name: gamma
""",
}
# one name in two namespaces, each with a generated config map of its own
for _space in ("zeta", "eta"):
    SAFE[f"apps/{_space}/kustomization.yaml"] = (
        KUSTOMIZATION + f"namespace: {_space}\nresources:\n  - ../../bases/web\n"
        f"configMapGenerator:\n  - name: settings\n    behavior: replace\n"
        f"    literals: [MODE={_space}]\n")
SAFE_OVERLAYS = ["apps/alpha/overlays/prod", "apps/beta/overlays/prod",
                 "apps/gamma/overlays/prod", "apps/delta/overlays/prod",
                 "apps/empty/overlays/prod", "apps/edge", "apps/zeta", "apps/eta"]


def tool() -> Kustomize:
    found = find_kustomize(None)
    assert found is not None
    return found


def files_of(repo: dict[str, str], overlay: str) -> dict[str, str | bytes]:
    index = TreeIndex({path: len(text) for path, text in repo.items()})
    found = build_inputs(index, overlay, repo)
    assert isinstance(found, BuildInputs)
    return {path: repo[path] for path in found.files}


async def alone_and_shared(repo: dict[str, str], overlays: list[str]
                           ) -> tuple[Builder, dict[str, BuildResult], dict[str, BuildResult]]:
    """Each overlay built alone, and all of them through `build_many`."""
    requests = [(overlay, KustomizeJob(overlay), files_of(repo, overlay)) for overlay in overlays]
    single = Builder(tool())
    alone = {key: await single.build(key, job, files) for key, job, files in requests}
    many = Builder(tool())
    await many.build_many(requests)
    runs = many.runs
    shared = {key: await many.build(key, job, files) for key, job, files in requests}
    assert many.runs == runs and many.hits == 0  # every answer was built ahead
    return many, alone, shared


async def registered(builder: Builder) -> None:
    """Until ``build_many`` has registered its batches (it reads the files in a thread)."""
    for _ in range(5000):
        if builder._running:
            return
        await asyncio.sleep(0.001)
    raise AssertionError("build_many registered nothing")


def write(root: Path, repo: dict[str, str]) -> None:
    for path, text in repo.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")


def kustomize(folder: Path) -> str:
    done = subprocess.run([*tool().command, "--load-restrictor", "LoadRestrictionsRootOnly",
                           str(folder)], capture_output=True, text=True, check=True)
    return done.stdout


def combined_parts(tmp_path: Path, repo: dict[str, str], overlays: list[str]) -> list[str]:
    """The parts of one shared run of ``overlays``, split, before any check."""
    write(tmp_path / "repo", repo)
    nonce = secrets.token_hex(8)
    write(tmp_path / "generated", batching.wrappers(overlays, nonce, "repo"))
    parts = batching.split(kustomize(tmp_path / "generated"), len(overlays), nonce)
    assert parts is not None
    return parts


async def test_safe_overlays_share_runs_and_each_gets_what_its_own_build_prints() -> None:
    many, alone, shared = await alone_and_shared(SAFE, SAFE_OVERLAYS)
    assert shared == alone
    assert all(result.images is not None for result in alone.values())
    assert (many.runs, many.shared_runs, many.batched) == (2, 2, 8)  # both slots busy


def test_the_split_is_byte_for_byte_each_overlays_own_output(tmp_path: Path) -> None:
    parts = combined_parts(tmp_path, SAFE, SAFE_OVERLAYS)
    for overlay, part in zip(SAFE_OVERLAYS, parts, strict=True):
        assert part == kustomize(tmp_path / "repo" / overlay)
    assert "alpha-settings-" in parts[0] and "---\nnot a separator" not in parts[3]


# Each of these is safe alone but makes a shared run print something else, or might.
UNSAFE = {
    "vars": KUSTOMIZATION + "resources:\n  - deployment.yaml\nvars:\n  - name: NAME\n"
    "    objref: {kind: Deployment, name: app, apiVersion: apps/v1}\n",
    "replacements": KUSTOMIZATION + "resources:\n  - deployment.yaml\nreplacements:\n"
    "  - source: {kind: Deployment, fieldPath: metadata.name}\n"
    "    targets:\n      - select: {kind: Deployment}\n        fieldPaths: [metadata.labels.copy]\n"
    "        options: {create: true}\n",
    "rename": KUSTOMIZATION + "resources:\n  - deployment.yaml\npatches:\n"
    "  - target: {kind: Deployment}\n    patch: |-\n      - op: replace\n"
    "        path: /metadata/name\n        value: renamed\n",
    "name-change": KUSTOMIZATION + "resources:\n  - deployment.yaml\npatches:\n"
    "  - path: patch.yaml\n    options: {allowNameChange: true}\n",
    "buildmetadata": KUSTOMIZATION + "resources:\n  - deployment.yaml\n"
    "buildMetadata: [originAnnotations]\n",
}


def unsafe_repo() -> dict[str, str]:
    repo = {f"apps/{name}/kustomization.yaml": text for name, text in UNSAFE.items()}
    for name in UNSAFE:
        repo[f"apps/{name}/deployment.yaml"] = deployment("app", f"ghcr.io/acme/{name}")
    repo["apps/name-change/patch.yaml"] = ("apiVersion: apps/v1\nkind: Deployment\n"
                                           "metadata:\n  name: app\nspec:\n  replicas: 2\n")
    repo["apps/hashed/kustomization.yaml"] = KUSTOMIZATION + "resources:\n  - service.yaml\n"
    repo["apps/hashed/service.yaml"] = (
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: hashed\n  annotations:\n"
        "    kustomize.config.k8s.io/needs-hash: \"true\"\nspec:\n  ports: [{port: 80}]\n")
    return repo


async def test_inputs_a_shared_run_could_change_are_built_alone() -> None:
    repo = unsafe_repo()
    overlays = [f"apps/{name}" for name in [*UNSAFE, "hashed"]]
    reasons = {overlay: batching.alone_reason(files_of(repo, overlay)) for overlay in overlays}
    assert reasons == {
        "apps/vars": "`apps/vars/kustomization.yaml` uses `vars`",
        "apps/replacements": "`apps/replacements/kustomization.yaml` uses `replacements`",
        "apps/rename": "`apps/rename/kustomization.yaml` has a patch that may rename",
        "apps/name-change": "`apps/name-change/kustomization.yaml` has a patch that may rename",
        "apps/buildmetadata": "`apps/buildmetadata/kustomization.yaml` uses `buildMetadata`",
        "apps/hashed": "`apps/hashed/service.yaml` may mark resources for hashing or dropping",
    }
    many, alone, shared = await alone_and_shared(repo, overlays)
    assert shared == alone and many.shared_runs == 0
    assert alone["apps/rename"].images is not None and "Deployment" in str(
        alone["apps/rename"].images)


def test_a_renaming_json_patch_in_a_file_of_its_own_is_found() -> None:
    files: dict[str, str | bytes] = {
        "o/kustomization.yaml": KUSTOMIZATION + "patches:\n  - path: p.json\n"
        "    target: {kind: Deployment}\n",
        "o/p.json": '[{"op": "move", "from": "/metadata/name", "path": "/metadata/x"}]'}
    assert batching.alone_reason(files) == "`o/p.json` has a JSON patch of `/metadata/name`"
    files["o/p.json"] = '[{"op": "replace", "path": "/spec/replicas", "value": 2}]'
    assert batching.alone_reason(files) is None
    assert batching.alone_reason({"o/kustomization.yaml": "- a list\n"}) == (
        "`o/kustomization.yaml` is empty or unreadable")
    assert batching.alone_reason({"o/kustomization.yaml": "? [a]\n: b\n"}) == (
        "`o/kustomization.yaml` uses `<complex key>`")
    assert batching.alone_reason({"o/chart.tgz": b"\x1f\x8b"}) == "`o/chart.tgz` is binary"
    assert batching.alone_reason({"o/p.yaml": "- [unclosed"}) is None
    assert batching.alone_reason({"o/p.yaml": "- just text\n- {op: test, path: /a}\n",
                                  "o/kustomization.yaml": "patches: [p.yaml]\n"}) is None


# `web` refers to a config map it does not define; the other overlay generates one of that
# name, which kustomize renames with its hash at the top of the build.
CAPTURED = {
    "apps/web/kustomization.yaml": KUSTOMIZATION + "resources:\n  - deployment.yaml\n",
    "apps/web/deployment.yaml": deployment("web", "ghcr.io/acme/web", ENV_FROM),
    "apps/api/kustomization.yaml": KUSTOMIZATION + "resources:\n  - deployment.yaml\n"
    "configMapGenerator:\n  - name: settings\n    literals: [MODE=api]\n",
    "apps/api/deployment.yaml": deployment("api", "ghcr.io/acme/api"),
}


async def test_a_reference_another_overlay_would_capture_is_built_alone(tmp_path: Path
                                                                       ) -> None:
    overlays = ["apps/web", "apps/api"]
    parts = combined_parts(tmp_path, CAPTURED, overlays)
    # The shared run rewrote web's reference to api's config map: not web's own build.
    assert parts[0] != kustomize(tmp_path / "repo" / "apps/web")
    assert "name: settings-" in parts[0] and parts[1] == kustomize(tmp_path / "repo/apps/api")
    many, alone, shared = await alone_and_shared(CAPTURED, overlays)
    assert shared == alone
    assert (many.runs, many.shared_runs, many.batched) == (2, 1, 1)  # web again, alone


async def test_a_namespaced_subject_is_built_alone() -> None:
    repo = {
        "apps/rbac/kustomization.yaml": KUSTOMIZATION + "namespace: rbac\n"
        "resources:\n  - binding.yaml\n",
        "apps/rbac/binding.yaml": "apiVersion: rbac.authorization.k8s.io/v1\n"
        "kind: RoleBinding\nmetadata:\n  name: reader\nroleRef:\n"
        "  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: reader\nsubjects:\n"
        "  - kind: ServiceAccount\n    name: bot\n    namespace: other\n",
        "apps/plain/kustomization.yaml": KUSTOMIZATION + "resources:\n  - deployment.yaml\n",
        "apps/plain/deployment.yaml": deployment("plain", "ghcr.io/acme/plain"),
    }
    many, alone, shared = await alone_and_shared(repo, ["apps/rbac", "apps/plain"])
    assert shared == alone and many.batched == 1


async def test_colliding_and_failing_overlays_are_split_down_to_single_builds() -> None:
    repo = {f"apps/{name}/kustomization.yaml": KUSTOMIZATION + "resources:\n"
            "  - deployment.yaml\n" for name in ("one", "two", "three", "four")}
    for name in ("one", "two", "three", "four"):
        # one and two both deploy `web` in the default namespace: a shared run refuses them
        repo[f"apps/{name}/deployment.yaml"] = deployment(
            "web" if name in ("one", "two") else name, f"ghcr.io/acme/{name}")
    repo["apps/broken/kustomization.yaml"] = KUSTOMIZATION + "resources:\n  - missing.yaml\n"
    overlays = ["apps/one", "apps/two", "apps/three", "apps/broken", "apps/four"]
    many, alone, shared = await alone_and_shared(repo, overlays)
    assert shared == alone
    assert alone["apps/broken"].images is None and "missing.yaml" in str(
        alone["apps/broken"].error)
    assert many.batched == 2 and many.runs > 5  # halves tried, then single builds


async def test_a_render_asked_while_its_batch_runs_waits_for_it() -> None:
    requests = [(overlay, KustomizeJob(overlay), files_of(SAFE, overlay))
                for overlay in SAFE_OVERLAYS[:2]]
    many = Builder(tool())
    batch = asyncio.ensure_future(many.build_many(requests))
    await registered(many)
    waiting = await many.build(*requests[0])
    await batch
    assert waiting.images is not None and many.hits == 1 and many.shared_runs == many.runs == 1


def test_the_reference_check_reads_kustomizes_field_paths() -> None:
    deployment_doc = {"kind": "Deployment", "metadata": {"name": "a-web"}, "spec": {
        "template": {"spec": {"containers": [
            {"name": "app", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}}}}
    ingress = {"kind": "Ingress", "metadata": {"name": "edge", "annotations": {
        "nginx.ingress.kubernetes.io/auth-secret": "basic"}}}
    part = batching.part_of([deployment_doc, ingress, "not a mapping"])
    assert part == batching.Part(("a-web", "edge"), ("cfg", "basic"), False)
    other = batching.Part(("cfg-5h8k2",), (), False)
    assert batching.isolated([part, other]) == [False, True]
    assert batching.isolated([part, batching.Part(("basics",), ("",), False)]) == [False, False]
    assert batching.isolated([part, batching.Part(("web",), (), False)]) == [True, True]


def test_output_without_the_runs_marker_is_not_split() -> None:
    marked = "a: 1\nmetadata:\n  conveyor-batch-n1:\n    g: \"0\"\n  name: x\n"
    assert batching.split(marked + "---\n" + marked, 1, "n1") == [
        "a: 1\nmetadata:\n  name: x\n---\na: 1\nmetadata:\n  name: x\n"]
    assert batching.split(marked, 1, "n2") is None
    assert batching.split(marked, 0, "n1") is None
    assert batching.split("", 2, "n1") == ["", ""]


def test_batches_take_requests_whose_files_agree() -> None:
    def request(key: str, files: dict[str, str | bytes]) -> Request:
        return key, KustomizeJob(key), files

    shared = {"base/kustomization.yaml": "resources: []\n"}
    requests = [request(f"o{index}", {**shared, f"o{index}/kustomization.yaml": "x: 1\n"})
                for index in range(5)]
    disagreeing = request("odd", {"base/kustomization.yaml": "resources: [a.yaml]\n"})
    chunks, unpaired = _chunks([*requests[:2], disagreeing, *requests[2:]], 2)
    assert [[key for key, _, _ in chunk] for chunk in chunks] == [
        ["o0", "o1", "o2"], ["o3", "o4"]]
    assert unpaired == [disagreeing]
    assert _chunks(requests[:3], 2)[0] == [requests[:3]]  # two or more a run
    unreadable, config_map = _exact_results(["a: [unclosed\n", "kind: ConfigMap\n"])
    assert unreadable is None and config_map is not None and config_map.images == {}


async def test_a_batch_given_up_fails_those_waiting_for_it() -> None:
    files: dict[str, str | bytes] = {"a/kustomization.yaml": "resources: []\n"}
    many = Builder(Kustomize(("sh", "-c", "sleep 1")))
    requests = [("a", KustomizeJob("a"), files), ("b", KustomizeJob("b"), files)]
    batch = asyncio.ensure_future(many.build_many(requests))
    await registered(many)
    waiting = asyncio.ensure_future(many.build(*requests[1]))
    await asyncio.sleep(0.1)
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    with pytest.raises(asyncio.CancelledError):
        await batch
    assert not many._running


async def test_renders_built_ahead_are_not_counted_twice_and_their_marks_stay_bounded(
        ) -> None:
    many = Builder(tool(), _cache=cachetools.LRUCache(maxsize=1))
    requests = [(overlay, KustomizeJob(overlay), files_of(SAFE, overlay))
                for overlay in SAFE_OVERLAYS[:2]]
    await many.build_many(requests)
    await many.build_many(requests[:1])  # kept: nothing new, the marks past the cache cleared
    assert len(many._prebuilt) <= 2 and many.hits == 0
