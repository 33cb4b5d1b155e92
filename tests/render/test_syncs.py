"""Argo CD and Flux objects read on their own: what each source follows, what it renders
here, which environment it points at, ApplicationSets expanded, and the rendered diff."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.render import diff as diff_module
from bot.render.appsets import Expansion, expand
from bot.render.diff import compare, diff_lines, resources_of
from bot.render.inputs import NeedTexts, TreeIndex
from bot.render.pointers import Here, Place, follow_target, points_at, repository_of
from bot.render.syncs import Follow, SyncObject, git_repository, sync_objects
from bot.render.targets import ChartTarget, FolderTarget, OverlayTarget

HERE = Here("acme/deploy", "main")


def test_a_repository_is_named_on_any_host() -> None:
    for url in ("https://github.com/acme/deploy", "https://github.com/Acme/deploy.git",
                "git@github.example.com:acme/deploy.git", "ssh://git@github.com/acme/deploy",
                "ssh://git@git.corp:2222/acme/deploy/"):
        assert repository_of(url) == "acme/deploy", url
    assert repository_of("deploy") is None and repository_of("https://host") is None
    assert repository_of("https://host/only") is None
    assert HERE.follows("https://github.com/acme/deploy", "refs/heads/main")
    assert HERE.default("HEAD") and HERE.default("") and not HERE.default("v1.0")
    assert not HERE.same("https://github.com/acme/other")


def only(text: str, path: str = "apps.yaml") -> SyncObject:
    [found] = sync_objects(path, text)
    return found


def app(source: dict[str, Any], **spec: Any) -> str:
    return json.dumps({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                       "metadata": {"name": "web-prod", "namespace": "argocd"},
                       "spec": {"source": source, "destination": {"namespace": "prod"},
                                **spec}})


def test_only_sync_objects_are_read() -> None:
    assert sync_objects("a.yaml", "kind: ConfigMap\n") == []
    assert sync_objects("a.yaml", "argoproj.io: [unclosed\n") == []
    assert sync_objects("a.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\n") == []
    two = ("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: a}\n"
           "---\n- a list\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
           "metadata: {name: b}\nspec: {url: 'https://x/o/r', ref: {tag: v1}}\n")
    found = sync_objects("s.yaml", two)
    assert [o.name for o in found] == ["a", "b"]
    assert git_repository(found[0]) == ("", "master")
    assert git_repository(found[1]) == ("https://x/o/r", "tag v1")
    assert "GitRepository `a` in `s.yaml`" in found[0].describe()


def test_an_applications_source_is_read_as_argo_cd_renders_it() -> None:
    obj = only(app({"repoURL": "https://github.com/acme/deploy", "targetRevision": "main",
                    "path": "./charts/api/",
                    "helm": {"valueFiles": ["values-prod.yaml"], "values": "a: 1\n",
                             "parameters": [{"name": "x", "value": "1", "forceString": True}],
                             "releaseName": "api", "skipCrds": True}}))
    [(key, follow)] = obj.follows
    assert key == "" and follow.path == "charts/api" and follow.tool == "helm"
    assert follow.value_files == ("values-prod.yaml",) and follow.inline == "a: 1\n"
    assert follow.parameters == (("x", "1", True),) and follow.release == "api"
    assert follow.namespace == "prod" and follow.problems == ()
    objected = only(app({"repoURL": "r", "path": "c", "helm": {"valuesObject": {"b": 2},
                                                                "fileParameters": [{}],
                                                                "postRenderer": 1}}))
    follow = objected.follows[0][1]
    assert follow.inline == '{"b": 2}' and follow.release == "web-prod"
    assert [p.split(",")[0] for p in follow.problems] == [
        "it sets Helm `fileParameters`", "it sets `helm.postRenderer`"]
    mapping = only(app({"repoURL": "r", "path": "c", "helm": {"values": {"c": 3}}}))
    assert mapping.follows[0][1].inline == '{"c": 3}'


def test_kustomize_and_directory_sources_and_what_cannot_be_rendered() -> None:
    obj = only(app({"repoURL": "r", "path": "apps/web/prod", "kustomize": {
        "images": ["ghcr.io/acme/web:1.2", "ghcr.io/acme/web=docker.io/x/web:2@sha256:" + "a" * 64,
                   "not an image!"],
        "namePrefix": "p-", "components": ["../../components/debug"], "version": "v5",
        "unknownSetting": 1}}))
    follow = obj.follows[0][1]
    options = json.loads(follow.options)
    assert options["images"] == [
        {"name": "ghcr.io/acme/web", "newTag": "1.2"},
        {"name": "ghcr.io/acme/web", "newName": "docker.io/x/web", "newTag": "2",
         "digest": "sha256:" + "a" * 64}, {"name": "not an image!"}]
    assert options["components"] == ["apps/components/debug"]
    assert follow.problems == ("it sets `kustomize.unknownSetting`, which Conveyor does not "
                               "apply",)
    plugin = only(app({"repoURL": "r", "path": "p", "plugin": {"name": "x"},
                       "directory": {"jsonnet": {"tlas": []}, "recurse": True}})).follows[0][1]
    assert plugin.tool == "directory" and plugin.recurse and len(plugin.problems) == 2


def test_a_multi_source_application_follows_each_source_and_knows_its_refs() -> None:
    obj = only(app({}, sources=[
        {"repoURL": "https://github.com/acme/deploy", "targetRevision": "main", "ref": "values"},
        {"repoURL": "https://charts.example", "chart": "redis", "targetRevision": "19.0.0",
         "helm": {"valueFiles": ["$values/envs/prod/redis.yaml"]}},
        {"repoURL": "https://github.com/acme/deploy", "path": "apps/web"}]))
    keys = [key for key, _ in obj.follows]
    assert keys == ["source 2", "source 3"]
    chart = obj.follows[0][1]
    assert chart.chart == "redis" and chart.refs == (
        ("values", "https://github.com/acme/deploy", "main"),)


def test_flux_objects() -> None:
    kustomization = only("""\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  sourceRef: {kind: GitRepository, name: flux-system}
  path: ./apps/production
  targetNamespace: prod
  images: [{name: web, newTag: "2"}]
  components: [../components/x]
  postBuild: {substitute: {tier: prod}}
""")
    [(_, follow)] = kustomization.follows
    assert kustomization.source_ref == ("GitRepository", "flux-system", "flux-system")
    assert follow.path == "apps/production" and follow.recurse
    assert json.loads(follow.options) == {"images": [{"name": "web", "newTag": "2"}],
                                          "namespace": "prod",
                                          "components": ["apps/components/x"]}
    assert "postBuild" in follow.problems[0]
    release = only("""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: api, namespace: apps}
spec:
  targetNamespace: prod
  chart:
    spec:
      chart: ./charts/api
      valuesFile: charts/api/values-prod.yaml
      sourceRef: {kind: GitRepository, name: deploy, namespace: flux-system}
  values: {replicaCount: 2}
  valuesFrom: [{kind: Secret, name: x}]
  postRenderers: [{kustomize: {}}]
  chartRef: {kind: OCIRepository, name: x}
""")
    [(_, follow)] = release.follows
    assert follow.release == "prod-api" and follow.namespace == "prod"
    assert follow.value_files == ("charts/api/values-prod.yaml",) and follow.replace_defaults
    assert follow.inline == '{"replicaCount": 2}' and len(follow.problems) == 3
    assert release.source_ref == ("GitRepository", "deploy", "flux-system")


def tree(*paths: str) -> TreeIndex:
    return TreeIndex({path: 1 for path in paths})


INDEX = tree("charts/api/Chart.yaml", "charts/api/values.yaml", "charts/api/values-prod.yaml",
             "apps/web/prod/kustomization.yaml", "manifests/prod/web.yaml", "envs/prod.yaml")
DEPLOY = "https://github.com/acme/deploy"


def test_what_a_source_renders_here() -> None:
    def target(follow: Follow, url: str = DEPLOY, revision: str = "") -> object:
        return follow_target(follow, url, revision, HERE, INDEX)

    assert target(Follow(DEPLOY, "", None, chart="redis"), "https://charts.example").startswith(
        "the chart `redis` of https://charts.example")
    assert target(Follow("", "", "x"), "https://github.com/else/where") == (
        "another repository (https://github.com/else/where)")
    assert "revision `v2` of this repository" in str(target(Follow("", "", "x"), DEPLOY, "v2"))
    assert "cannot render: a plugin" in str(target(Follow("", "", "x", problems=("a plugin",))))
    assert "folder `nowhere`" in str(target(Follow("", "", "nowhere")))
    chart = target(Follow("", "", "charts/api", value_files=("values-prod.yaml",
                                                             "../../envs/prod.yaml"),
                          base="charts/api", release="api", namespace="prod"))
    assert chart == ChartTarget("charts/api", ("charts/api/values-prod.yaml", "envs/prod.yaml"),
                                "api", "prod")
    assert target(Follow("", "", "apps/web/prod")) == OverlayTarget("apps/web/prod")
    assert target(Follow("", "", "manifests/prod")) == FolderTarget("manifests/prod")
    assert "without a kustomization" in str(target(Follow("", "", "manifests/prod",
                                                          options='{"namePrefix":"p"}')))
    ref = (("values", DEPLOY, "main"),)
    assert target(Follow("", "", "charts/api", tool="helm", value_files=("$values/envs/prod.yaml",),
                         refs=ref)) == ChartTarget("charts/api", ("envs/prod.yaml",), "api",
                                                   "default")
    assert "of another source" in str(target(Follow("", "", "charts/api", tool="helm",
                                                    value_files=("$other/x.yaml",), refs=ref)))
    assert "outside this repository" in str(target(Follow(
        "", "", "charts/api", tool="helm", value_files=("https://example.com/v.yaml",))))


def test_which_environment_a_target_points_at() -> None:
    prod = Place("production", ("api",), ("charts/api/values-prod.yaml",),
                 ChartTarget("charts/api", ("charts/api/values-prod.yaml",), "api", "production"))
    staging = Place("staging", ("api",), ("charts/api/values.yaml",),
                    ChartTarget("charts/api", (), "api", "staging"))
    claimed = frozenset({"charts/api/values-prod.yaml", "charts/api/values.yaml"})
    with_prod = ChartTarget("charts/api", ("charts/api/values-prod.yaml",), "x", "y")
    bare = ChartTarget("charts/api", (), "x", "y")
    assert points_at(with_prod, prod, claimed) and not points_at(bare, prod, claimed)
    assert points_at(bare, staging, claimed) and not points_at(with_prod, staging, claimed)
    assert not points_at(OverlayTarget("charts/api"), prod, claimed)
    overlay = Place("production", ("web",), ("apps/web/prod/kustomization.yaml",),
                    OverlayTarget("apps/web/prod"))
    assert points_at(OverlayTarget("apps/web/prod", '{"namePrefix":"p"}'), overlay, claimed)
    assert not points_at(bare, overlay, claimed)
    plain = Place("production", ("web",), ("manifests/prod/web.yaml",), None)
    assert plain.folder == "manifests/prod" and overlay.folder == "apps/web/prod"
    assert points_at(FolderTarget("manifests/prod"), plain, claimed)
    assert points_at(FolderTarget("manifests", recurse=True), plain, claimed)
    assert points_at(FolderTarget("", recurse=True), plain, claimed)
    assert not points_at(FolderTarget("manifests"), plain, claimed)


def appset(generators: list[Any], **spec: Any) -> SyncObject:
    template = spec.pop("template", {
        "metadata": {"name": "web-{{env}}"},
        "spec": {"source": {"repoURL": DEPLOY, "path": "apps/web/{{env}}"},
                 "destination": {"namespace": "{{env}}"}}})
    return only(json.dumps({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                            "metadata": {"name": "web"},
                            "spec": {"generators": generators, "template": template,
                                     **spec}}))


def expanded(obj: SyncObject, index: TreeIndex = INDEX,
             texts: dict[str, str | None] | None = None) -> Expansion:
    found = expand(obj, index, texts or {}, HERE.follows)
    assert isinstance(found, Expansion)
    return found


def test_a_list_generator_fills_the_template() -> None:
    found = expanded(appset([{"list": {"elements": [{"env": "staging"}, {"env": "prod",
                                                                          "x": {"y": 1}}]}}]))
    assert found.problem is None
    assert [(key, f.path, f.namespace) for key, f in found.follows] == [
        ("web-staging", "apps/web/staging", "staging"), ("web-prod", "apps/web/prod", "prod")]
    assert found.template[0].path == "apps/web/{{env}}"


def test_a_git_generator_expands_directories_and_files() -> None:
    index = tree("apps/web/prod/kustomization.yaml", "apps/web/staging/kustomization.yaml",
                 "apps/web/skip/kustomization.yaml", "config/prod/config.json")
    dirs = appset([{"git": {"repoURL": DEPLOY, "revision": "HEAD", "directories": [
        {"path": "apps/web/*"}, {"path": "apps/web/skip", "exclude": True}]}}],
        template={"metadata": {"name": "{{path.basename}}-{{path[1]}}"},
                  "spec": {"source": {"repoURL": DEPLOY, "path": "{{path}}"}}})
    found = expanded(dirs, index)
    assert [key for key, _ in found.follows] == ["prod-web", "staging-web"]
    files = appset([{"git": {"repoURL": DEPLOY, "files": [{"path": "config/**/config.json"}]}}],
                   goTemplate=True, template={
                       "metadata": {"name": "{{ .cluster.name }}"},
                       "spec": {"source": {"repoURL": DEPLOY,
                                           "path": "apps/web/{{ index .path.segments 1 }}"}}})
    assert expand(files, index, {}, HERE.follows) == NeedTexts(("config/prod/config.json",))
    found = expanded(files, index, {"config/prod/config.json": '{"cluster": {"name": "eu"}}'})
    assert [(key, f.path) for key, f in found.follows] == [("eu", "apps/web/prod")]
    broken = expanded(files, index, {"config/prod/config.json": "[1]"})
    assert broken.problem is not None and "not a YAML or JSON object" in broken.problem
    elsewhere = appset([{"git": {"repoURL": "https://github.com/acme/other", "files": []}}])
    assert "another repository" in str(expanded(elsewhere).problem)


def test_what_an_application_set_cannot_expand_is_said() -> None:
    assert "`clusters` generator" in str(expanded(appset([{"clusters": {}}])).problem)
    assert "not a single generator" in str(expanded(appset([{"list": {}, "git": {}}])).problem)
    assert "templatePatch" in str(expanded(appset([], templatePatch="x")).problem)
    fancy = appset([{"list": {"elements": [{"env": "prod"}]}}], template={
        "metadata": {"name": "web"},
        "spec": {"source": {"repoURL": DEPLOY, "path": "{{ env | upper }}"}}})
    assert "an expression Conveyor does not evaluate" in str(expanded(fancy).problem)


def test_a_set_that_generates_too_much_is_not_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.render import appsets
    monkeypatch.setattr(appsets, "MAX_GENERATED", 1)
    assert "more than 1 applications" in str(expanded(appset([{"list": {"elements": [
        {"env": "a"}, {"env": "b"}]}}])).problem)


def secret(value: str) -> dict[str, Any]:
    return {"kind": "Secret", "metadata": {"name": "s", "namespace": "p"},
            "data": {"password": value}, "stringData": "raw"}


def test_the_diff_masks_secrets_and_says_what_changed() -> None:
    before = resources_of([secret("aGVsbG8="), {"kind": "ConfigMap", "metadata": {"name": "c"}},
                           {"kind": "ConfigMap", "metadata": {"name": "c"}}, "text"])
    after = resources_of([secret("d29ybGQ="), {"kind": "Service", "metadata": {"name": "s"}}])
    found = compare(before, after)
    assert found.added == ("Service s",) and found.removed == ("ConfigMap c", "ConfigMap c #2")
    [(key, body)] = found.changed
    assert key == "Secret p/s" and body == ("# the value of data.password changes (masked)",)
    text = "\n".join(diff_lines("production", found))
    assert "aGVsbG8" not in text and "d29ybGQ" not in text
    assert diff_lines("x", compare(after, after))[-2] == "The rendered resources do not change."
    assert compare(None, after).added == ("Secret p/s", "Service s")


def test_a_render_too_large_to_keep_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diff_module, "MAX_KEPT_BYTES", 10)
    large = resources_of([{"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}])
    assert large.packed is None and large.items() == []
    found = compare(large, large)
    assert diff_lines("x", found)[-2] == "the render is too large to show its diff"


def test_a_fence_in_a_resource_does_not_close_the_diffs_block() -> None:
    before = resources_of([{"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}])
    after = resources_of([{"kind": "ConfigMap", "metadata": {"name": "c"},
                           "data": {"a": "```\nend"}}])
    lines = diff_lines("x", compare(before, after))
    assert sum(line.startswith("```") for line in lines) == 2


def test_a_chart_environment_renders_as_the_object_that_renders_it_says() -> None:
    from bot.domain.policy import load_policy
    from bot.promotion.builds import chart_pointers, policy_renders

    policy = load_policy("""\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  api:
    image: ghcr.io/acme/api
    source: acme/api
environments:
  - name: staging
    path: charts/api/values.yaml
    from: release
  - name: production
    path: envs/prod.yaml
    after: staging
""")
    index = tree("charts/api/Chart.yaml", "charts/api/values.yaml", "envs/prod.yaml")
    renders = policy_renders(policy, index)
    assert [(r.environment, r.target) for r in renders] == [
        ("staging", ChartTarget("charts/api", (), "api", "staging"))]
    release = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: api, namespace: prod}
spec:
  chart:
    spec:
      chart: ./charts/api
      sourceRef: {kind: GitRepository, name: deploy, namespace: flux-system}
      valuesFiles: [charts/api/values.yaml, envs/prod.yaml]
"""
    repository = ("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\n"
                  "metadata: {name: deploy, namespace: flux-system}\n"
                  "spec: {url: 'ssh://git@github.com/acme/deploy', ref: {branch: main}}\n")
    objects = sync_objects("release.yaml", release)
    # without the GitRepository its source is unknown: nothing changes
    assert chart_pointers(policy, index, renders, objects, HERE, gated_only=False) == renders
    objects += sync_objects("sync.yaml", repository)
    found = chart_pointers(policy, index, renders, objects, HERE, gated_only=False)
    assert [(r.environment, r.target) for r in found] == [
        ("staging", ChartTarget("charts/api", (), "api", "staging")),
        ("production", ChartTarget("charts/api", ("charts/api/values.yaml", "envs/prod.yaml"),
                                   "api", "prod", replace_defaults=True))]
    gated = policy_renders(policy, index, gated_only=True)
    assert gated == [] and chart_pointers(policy, index, gated, objects, HERE,
                                          gated_only=True) == [found[1]]
