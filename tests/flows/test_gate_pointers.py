"""The gate judges the objects that tell the cluster what to sync: Argo CD Applications (app of
apps) and ApplicationSets, Flux Kustomizations and HelmReleases, kept in the deployment
repository beside what they point at.

The fixtures are laid out like the public examples users start from: one Application per
environment in `argocd/` (argoproj/argocd-example-apps' app of apps), and a `clusters/<env>/`
folder per cluster with a Flux Kustomization syncing `apps/...` from the `flux-system`
GitRepository (fluxcd/flux2-kustomize-helm-example). Renders run the machine's real kustomize
and Helm.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.render.tool import find_helm, find_kustomize
from bot.sandbox.demo import DEMO_FILES
from bot.text import unescape_markdown
from tests.flows.test_gate_charts import layout
from tests.harness import World, close_world, make_world

pytestmark = pytest.mark.skipif(
    (find_kustomize(None) is None or find_helm(None) is None) and not os.environ.get("CI"),
    reason="needs kustomize and helm")


def application(name: str, path: str, *, revision: str = "HEAD",
                repo: str = "https://github.com/acme/deploy.git", extra: str = "") -> str:
    return f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: argocd
spec:
  project: default
  source:
    repoURL: {repo}
    targetRevision: {revision}
    path: {path}
{extra}  destination:
    server: https://kubernetes.default.svc
    namespace: {name.rsplit('-', 1)[-1]}
  syncPolicy:
    automated:
      prune: true
"""


STAGING_APP = "argocd/web-staging.yaml"
PRODUCTION_APP = "argocd/web-production.yaml"
CANARY = "apps/web/overlays/canary/kustomization.yaml"
CANARY_OVERLAY = DEMO_FILES["apps/web/overlays/prod/kustomization.yaml"].replace(
    'newTag: "0.9.0"', 'newTag: "6.6.6"')

FLUX_SYNC = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  url: ssh://git@github.com/acme/deploy
"""


def flux_apps(path: str) -> str:
    return f"""\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m0s
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: {path}
  prune: true
  wait: true
"""


def helm_release(values: str = "") -> str:
    return f"""\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: api
  namespace: production
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/api
      sourceRef:
        kind: GitRepository
        name: flux-system
        namespace: flux-system
      valuesFiles:
        - charts/api/values.yaml
        - charts/api/values-production.yaml
{values}"""


POINTERS = {
    STAGING_APP: application("web-staging", "apps/web/overlays/staging"),
    PRODUCTION_APP: application("web-production", "apps/web/overlays/prod", revision="main"),
    "clusters/production/flux-system/gotk-sync.yaml": FLUX_SYNC,
    "clusters/production/apps.yaml": flux_apps("./apps/web/overlays/prod"),
    "clusters/production/api.yaml": helm_release(),
}


def summary(run: dict[str, Any]) -> str:
    return f"{run['output']['title']}\n{unescape_markdown(run['output']['summary'])}"


async def change(world: World, files: dict[str, str | None], title: str) -> dict[str, Any]:
    branch = "hand/" + title.lower().replace(" ", "-")
    await world.emulator.push_files(world.repo, files, branch=branch, author="alice",
                                    message=title)
    await world.emulator.open_pull(world.repo, branch, title=title, author="alice")
    await world.settle()
    return world.pull(title, state="open")


def gate_of(world: World, pr: dict[str, Any], conclusion: str, *needles: str) -> str:
    run = world.gate(pr)
    text = summary(run)
    assert run["conclusion"] == conclusion, text
    for needle in needles:
        assert needle in text, text
    return text


@pytest.fixture
async def pointed() -> AsyncIterator[World]:
    built = await make_world(files={**DEMO_FILES, **POINTERS})
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == []


async def test_an_application_re_pointed_at_a_new_overlay_is_judged(pointed: World) -> None:
    world = pointed
    pr = await change(world, {CANARY: CANARY_OVERLAY, PRODUCTION_APP: application(
        "web-production", "apps/web/overlays/canary", revision="main")}, "Try the canary")
    text = gate_of(world, pr, "failure", "production pointer",
                   "the Argo CD Application `web-production` in `argocd/web-production.yaml` "
                   "now follows `apps/web/overlays/canary`",
                   "ghcr.io/acme/web:0.9.0 → ghcr.io/acme/web:6.6.6")
    assert "no gated environment changed" not in text.lower()


async def test_an_application_following_another_branch_fails(pointed: World) -> None:
    world = pointed
    pr = await change(world, {PRODUCTION_APP: application(
        "web-production", "apps/web/overlays/prod", revision="feature/fast")}, "Follow a branch")
    gate_of(world, pr, "failure", "would now follow revision `feature/fast` of this "
                                  "repository, not its default branch `main`")


async def test_an_application_following_another_repository_fails(pointed: World) -> None:
    world = pointed
    pr = await change(world, {PRODUCTION_APP: application(
        "web-production", "apps/web/overlays/prod", revision="main",
        repo="https://github.com/someone/deploy")}, "Follow a fork")
    gate_of(world, pr, "failure", "would now follow another repository "
                                  "(https://github.com/someone/deploy)")


async def test_kustomize_images_set_in_the_application_are_judged(pointed: World) -> None:
    world = pointed
    images = "    kustomize:\n      images:\n        - ghcr.io/acme/web=docker.io/evil/web:1.0\n"
    pr = await change(world, {PRODUCTION_APP: application(
        "web-production", "apps/web/overlays/prod", revision="main", extra=images)},
        "Override the image")
    gate_of(world, pr, "failure", "docker.io/evil/web is not under allowed_images",
            "with the pointer's Kustomize settings")


async def test_a_staging_only_pointer_change_passes_without_productions_approvals(
        pointed: World) -> None:
    world = pointed
    pr = await change(world, {STAGING_APP: application(
        "web-staging", "apps/web/overlays/staging", revision="feature/fast")},
        "Staging follows a branch")
    run = world.gate(pr)
    assert run["conclusion"] == "success"
    assert run["output"]["title"] == "No gated environment changed"


async def test_a_deleted_production_application_asks_for_productions_approvals(
        pointed: World) -> None:
    world = pointed
    pr = await change(world, {PRODUCTION_APP: None}, "Stop syncing production")
    gate_of(world, pr, "action_required", "no longer syncs production",
            "the Argo CD Application `web-production`")


async def test_a_moved_application_is_the_same_pointer(pointed: World) -> None:
    world = pointed
    pr = await change(world, {PRODUCTION_APP: None,
                              "argocd/production/web.yaml": POINTERS[PRODUCTION_APP]},
                      "Move the application")
    assert world.gate(pr)["output"]["title"] == "No gated environment changed"


async def test_a_flux_kustomization_re_pointed_is_judged(pointed: World) -> None:
    world = pointed
    pr = await change(world, {CANARY: CANARY_OVERLAY,
                              "clusters/production/apps.yaml": flux_apps(
                                  "./apps/web/overlays/canary")}, "Flux canary")
    gate_of(world, pr, "failure", "the Flux Kustomization `apps` in "
                                  "`clusters/production/apps.yaml` now follows "
                                  "`apps/web/overlays/canary`", "ghcr.io/acme/web:6.6.6")


async def test_a_helm_releases_inline_values_are_judged(pointed: World) -> None:
    world = pointed
    values = "  values:\n    image:\n      repository: docker.io/evil/api\n"
    pr = await change(world, {"clusters/production/api.yaml": helm_release(values)},
                      "Inline values")
    gate_of(world, pr, "failure", "the Flux HelmRelease `api`", "docker.io/evil/api is not "
            "under allowed_images", "chart `charts/api`")


APPSET = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: web
  namespace: argocd
spec:
  generators:
    - list:
        elements:
{elements}
  template:
    metadata:
      name: 'web-{{{{env}}}}'
    spec:
      project: default
      source:
        repoURL: https://github.com/acme/deploy
        targetRevision: HEAD
        path: 'apps/web/overlays/{{{{env}}}}'
        kustomize:
          images:
            - 'ghcr.io/acme/web:{{{{tag}}}}'
      destination:
        server: '{{{{server}}}}'
        namespace: web
"""
STAGING_ELEMENT = "          - {env: staging, tag: 1.0.0, server: https://staging.example}\n"
PROD_ELEMENT = "          - {env: prod, tag: 6.6.6, server: https://prod.example}\n"


async def test_an_application_set_whose_list_gains_productions_folder_is_judged() -> None:
    world = await make_world(files={**DEMO_FILES,
                                    "argocd/web-set.yaml": APPSET.format(
                                        elements=STAGING_ELEMENT)})
    try:
        pr = await change(world, {"argocd/web-set.yaml": APPSET.format(
            elements=STAGING_ELEMENT + PROD_ELEMENT)}, "Production joins the set")
        gate_of(world, pr, "failure", "the Argo CD ApplicationSet `web`",
                "ghcr.io/acme/web:6.6.6", "production pointer")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_an_application_set_conveyor_cannot_expand_fails_closed_when_it_changes() -> None:
    clusters = APPSET.replace("    - list:\n        elements:\n{elements}",
                              "    - clusters:\n        selector:\n          matchLabels:\n"
                              "            tier: {tier}\n")
    world = await make_world(files={**DEMO_FILES,
                                    "argocd/web-set.yaml": clusters.format(tier="web")})
    try:
        pr = await change(world, {"argocd/web-set.yaml": clusters.format(tier="all")},
                          "Every cluster")
        gate_of(world, pr, "failure", "what Conveyor cannot expand: its `clusters` generator "
                                      "is not one Conveyor expands")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_pointer_is_judged_in_what_the_merge_makes_when_main_changes_its_target(
        pointed: World) -> None:
    """Re-pointed at a copy of production, production changes nothing; once main changes
    the copy, the merge makes production run the change, and the open PR is judged so."""
    world = pointed
    await world.emulator.push_files(
        world.repo, {CANARY: DEMO_FILES["apps/web/overlays/prod/kustomization.yaml"]})
    pr = await change(world, {PRODUCTION_APP: application(
        "web-production", "apps/web/overlays/canary", revision="main")}, "Follow the canary")
    assert world.gate(pr)["output"]["title"] == "No gated environment changed"
    await world.emulator.push_files(world.repo, {CANARY: CANARY_OVERLAY}, author="bob",
                                    message="canary 6.6.6")
    await world.settle()
    gate_of(world, world.pull("Follow the canary", state="open"), "failure",
            "now follows `apps/web/overlays/canary`",
            "ghcr.io/acme/web:0.9.0 → ghcr.io/acme/web:6.6.6")


async def test_an_application_re_pointed_at_a_copy_with_more_replicas_passes(
        pointed: World) -> None:
    world = pointed
    copy = "apps/web/overlays/prod-copy"
    pr = await change(world, {
        f"{copy}/kustomization.yaml": DEMO_FILES["apps/web/overlays/prod/kustomization.yaml"]
        + "replicas:\n  - name: web\n    count: 3\n",
        PRODUCTION_APP: application("web-production", copy, revision="main")}, "Copy")
    gate_of(world, pr, "success", f"now follows `{copy}`, with every workload's image "
                                  "unchanged")


async def test_an_application_re_pointed_at_an_identical_copy_changes_nothing(
        pointed: World) -> None:
    world = pointed
    copy = "apps/web/overlays/prod-same"
    pr = await change(world, {
        f"{copy}/kustomization.yaml": DEMO_FILES["apps/web/overlays/prod/kustomization.yaml"],
        PRODUCTION_APP: application("web-production", copy, revision="main")}, "Same")
    assert world.gate(pr)["output"]["title"] == "No gated environment changed"


async def test_a_pointer_at_what_does_not_render_fails_with_the_tools_message(
        pointed: World) -> None:
    world = pointed
    broken = "apps/web/overlays/broken"
    pr = await change(world, {
        f"{broken}/kustomization.yaml": "resources:\n  - missing.yaml\n",
        PRODUCTION_APP: application("web-production", broken, revision="main")}, "Broken")
    gate_of(world, pr, "failure", f"would now follow `{broken}`, which does not render",
            "missing.yaml")


async def test_a_flux_object_whose_source_is_not_in_the_repository_is_said(
        pointed: World) -> None:
    world = pointed
    moved = flux_apps("./apps/web/overlays/canary").replace("name: flux-system\n  path",
                                                            "name: elsewhere\n  path")
    pr = await change(world, {"clusters/production/apps.yaml": moved}, "Another source")
    gate_of(world, pr, "failure", "the GitRepository `flux-system/elsewhere`, which this "
                                  "repository does not hold")


async def test_without_helm_a_helm_release_pointer_change_fails_closed() -> None:
    world = await make_world(files={**DEMO_FILES, **POINTERS}, helm=None)
    try:
        values = "  values:\n    replicaCount: 3\n"
        pr = await change(world, {"clusters/production/api.yaml": helm_release(values)},
                          "Replicas")
        gate_of(world, pr, "failure", "and its tool is off here")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


GIT_FILES_SET = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: web-clusters
  namespace: argocd
spec:
  goTemplate: true
  generators:
    - git:
        repoURL: git@github.com:acme/deploy.git
        revision: main
        files:
          - path: clusters/*/web.json
  template:
    metadata:
      name: 'web-{{ .cluster }}'
    spec:
      project: default
      source:
        repoURL: git@github.com:acme/deploy.git
        targetRevision: main
        path: '{{ .overlay }}'
      destination:
        server: https://kubernetes.default.svc
        namespace: web
"""


async def test_an_application_set_reading_its_clusters_from_files_is_expanded() -> None:
    files = {**DEMO_FILES, "argocd/web-set.yaml": GIT_FILES_SET,
             "clusters/eu/web.json": '{"cluster": "eu", "overlay": "apps/web/overlays/prod"}\n'}
    world = await make_world(files=files)
    try:
        pr = await change(world, {CANARY: CANARY_OVERLAY,
                                  "argocd/web-set.yaml": GIT_FILES_SET.replace(
                                      "path: '{{ .overlay }}'",
                                      "path: '{{ .overlay }}'\n        kustomize:\n"
                                      "          namePrefix: eu-")},
                          "Prefix the clusters")
        # a renamed workload runs an image production runs already: nothing new to judge
        gate_of(world, pr, "success", "the Argo CD ApplicationSet `web-clusters`",
                "now follows `apps/web/overlays/prod` with the pointer's Kustomize settings",
                "Deployment eu-web, container web: (new) → ghcr.io/acme/web:0.9.0")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_values_file_outside_the_chart_renders_with_the_chart_its_application_names(
        ) -> None:
    """Production's file is `envs/production/api.yaml`, which no chart holds: the Application
    that renders `charts/api` with it as a value file says how production renders."""
    policy = DEMO_FILES[".github/conveyor.yml"].replace(
        "      production: charts/api/values-production.yaml",
        "      production: envs/production/api.yaml")
    app_of_api = application("api-production", "charts/api", revision="main", extra=(
        "    helm:\n      releaseName: api-prod\n      valueFiles:\n"
        "        - ../../envs/production/api.yaml\n"))
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy,
                                    "envs/production/api.yaml":
                                        DEMO_FILES["charts/api/values-production.yaml"],
                                    "argocd/api-production.yaml": app_of_api})
    try:
        template = DEMO_FILES["charts/api/templates/deployment.yaml"].replace(
            "        {{- if .Values.metrics.enabled }}",
            "        - name: debug\n          image: docker.io/evil/miner:1.0\n"
            "        {{- if .Values.metrics.enabled }}")
        pr = await change(world, {"charts/api/templates/deployment.yaml": template}, "Debug")
        gate_of(world, pr, "failure", "production render",
                "Deployment api-prod, container debug",
                "docker.io/evil/miner is not under allowed_images")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_directory_application_of_plain_manifests_is_a_pointer_too() -> None:
    """Production's files are plain manifests in `manifests/production/`, synced by an
    Application of that folder (Argo CD's directory source)."""
    files = layout("plain-manifests")
    files["argocd/production.yaml"] = application(
        "shop-production", "manifests/production", repo="https://github.com/acme/deploy")
    world = await make_world(files=files)
    try:
        canary = files["manifests/production/orders.yaml"].replace(
            "ghcr.io/northwind/orders:2.0.4", "ghcr.io/northwind/orders:9.9.9")
        pr = await change(world, {"manifests/canary/orders.yaml": canary,
                                  "argocd/production.yaml": application(
                                      "shop-production", "manifests/canary",
                                      repo="https://github.com/acme/deploy")}, "Canary")
        gate_of(world, pr, "failure", "now follows the manifests of `manifests/canary`",
                "ghcr.io/northwind/orders:2.0.4 → ghcr.io/northwind/orders:9.9.9")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_flux_kustomization_of_an_external_artifact_is_not_read_as_this_repository(
        pointed: World) -> None:
    """fluxcd/flux2-kustomize-helm-example now syncs apps from an ArtifactGenerator's
    ExternalArtifact: what it holds is not this repository's default branch as far as the
    gate can tell, so it is no environment's pointer."""
    world = pointed
    external = flux_apps("./apps/web/overlays/canary").replace(
        "    kind: GitRepository\n    name: flux-system\n",
        "    kind: ExternalArtifact\n    name: apps\n")
    await world.emulator.push_files(world.repo, {"clusters/production/apps.yaml": external},
                                    message="Sync from the artifact")
    await world.settle()
    pr = await change(world, {"clusters/production/apps.yaml": external.replace(
        "./apps/web/overlays/canary", "./apps/web/overlays/prod")}, "Artifact path")
    assert world.gate(pr)["output"]["title"] == "No gated environment changed"


async def test_an_unexpandable_set_whose_template_names_productions_folder_fails_closed() -> None:
    literal = APPSET.replace("path: 'apps/web/overlays/{{{{env}}}}'",
                             "path: apps/web/overlays/prod").replace(
        "    - list:\n        elements:\n{elements}",
        "    - clusters:\n        selector:\n          matchLabels:\n            tier: {tier}\n")
    elsewhere = literal.replace("repoURL: https://github.com/acme/deploy",
                                "repoURL: https://github.com/acme/other")
    world = await make_world(files={**DEMO_FILES, "argocd/a.yaml": literal.format(tier="a"),
                                    "argocd/b.yaml": elsewhere.format(tier="a").replace(
                                        "name: web\n", "name: other\n", 1)})
    try:
        pr = await change(world, {"argocd/a.yaml": literal.format(tier="b")}, "Tier b")
        gate_of(world, pr, "failure", "the Argo CD ApplicationSet `web`",
                "what Conveyor cannot expand")
        other = await change(world, {"argocd/b.yaml": elsewhere.format(tier="b").replace(
            "name: web\n", "name: other\n", 1)}, "Other tier b")
        assert world.gate(other)["output"]["title"] == "No gated environment changed"
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_pointer_in_a_tree_github_lists_in_part_fails_closed(pointed: World) -> None:
    world = pointed
    world.emulator.world.tree_entry_limit = 5
    pr = await change(world, {PRODUCTION_APP: application(
        "web-production", "apps/web/overlays/prod", revision="main",
        extra="    directory:\n      recurse: true\n")}, "Recurse")
    gate_of(world, pr, "failure", "the Argo CD Application `web-production`",
            "GitHub lists only part of the tree")
