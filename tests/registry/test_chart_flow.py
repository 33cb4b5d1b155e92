"""A Helm chart promoted like an image, over HTTP: the chart is pushed to the real
`docker-registry` (`helm push`'s OCI layout), a release of its source opens the staging PR (an
Argo CD Application's `targetRevision`), `/promote production` carries it to a helmfile, and
the gate judges the digest the version resolves to — a tag pushed again fails it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.sandbox.stack import publish_release
from conveyor_emulator.registry.images import build_image
from tests.flows.test_commands import reply_to, say
from tests.harness import World, close_world, make_world
from tests.registry.support import RegistryServer, push, push_chart

CHART = "ghcr.io/acme/charts/web"

POLICY = """version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web-chart:
    chart: ghcr.io/acme/charts/web
    source: acme/web
    tags: "semver:^1"
environments:
  - name: staging
    path: deploy/staging/{service}.yaml
    from: release
    auto_merge: true
  - name: production
    path: deploy/production/helmfile.yaml
    after: staging
    evidence: [merged]
"""

STAGING = """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web-staging
  namespace: argocd
spec:
  project: default
  source:
    repoURL: ghcr.io/acme/charts
    chart: web
    targetRevision: 1.4.1  # promoted by Conveyor
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"""

PRODUCTION = """releases:
  - name: web
    namespace: web
    chart: oci://ghcr.io/acme/charts/web
    version: 1.4.1
"""


@pytest.fixture
async def world(registry: RegistryServer) -> AsyncIterator[World]:
    files = {".github/conveyor.yml": POLICY, "deploy/staging/web-chart.yaml": STAGING,
             "deploy/production/helmfile.yaml": PRODUCTION}
    built = await make_world(files=files, registry_endpoints={"ghcr.io": registry.url})
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def reply(world: World, number: int, body: str) -> str:
    return reply_to(world, number, await say(world, number, body))


async def test_a_chart_goes_through_staging_to_production_and_a_re_pushed_tag_fails(
        world: World, registry: RegistryServer, session: aiohttp.ClientSession) -> None:
    digest = await push_chart(session, registry, "acme/charts/web", "web", "1.4.2",
                              source="https://github.com/acme/web")
    await publish_release(world.emulator, CHART, "acme/web", "1.4.2", digest,
                          publish_image=False)
    await world.settle()

    staging = world.pull("Promote web-chart 1.4.2 to staging")
    assert staging["merged"], staging
    text = world.emulator.file(world.repo, "deploy/staging/web-chart.yaml")
    assert text == STAGING.replace("targetRevision: 1.4.1", "targetRevision: 1.4.2")
    assert digest in staging["body"]

    answer = await reply(world, staging["number"], "/promote production")
    production = world.pull("Promote web-chart 1.4.2 to production")
    assert f"#{production['number']}" in answer
    written = world.emulator.file(world.repo, "deploy/production/helmfile.yaml",
                                  production["head"]["ref"])
    assert written == PRODUCTION.replace("version: 1.4.1", "version: 1.4.2")
    gate = world.gate(production)
    assert gate["conclusion"] == "success", gate["output"]
    assert "merged in staging" in gate["output"]["summary"]

    pushed_again = await push_chart(session, registry, "acme/charts/web", "web", "1.4.2",
                                    source="https://github.com/acme/web", body="changed")
    assert pushed_again != digest
    await reply(world, production["number"], "/recheck")
    gate = world.gate(world.pull("Promote web-chart 1.4.2 to production"))
    assert gate["conclusion"] == "failure", gate["output"]["summary"]
    summary = gate["output"]["summary"]
    assert f"staging took 1.4.2 as {digest[:19]}" in summary, summary


async def test_an_image_under_the_charts_name_is_refused_on_the_release(
        world: World, registry: RegistryServer, session: aiohttp.ClientSession) -> None:
    image = build_image("web:1.5.0")
    await push(session, registry, "acme/charts/web", image, ["1.5.0"])
    await publish_release(world.emulator, CHART, "acme/web", "1.5.0", image.digest,
                          publish_image=False)
    await world.settle()
    assert world.open_pulls() == []
    sha = world.emulator.commit("acme/web", "v1.5.0")["sha"]
    [run] = world.emulator.check_runs("acme/web", sha, "conveyor/promotion (staging)")
    assert run["conclusion"] == "failure"
    assert ("ghcr.io/acme/charts/web:1.5.0 is a container image, not a Helm chart"
            in run["output"]["summary"]), run["output"]


async def test_an_umbrella_chart_with_a_lock_file_is_refused(
        registry: RegistryServer, session: aiohttp.ClientSession) -> None:
    umbrella = ("apiVersion: v2\nname: storefront\nversion: 0.3.0\ndependencies:\n"
                "  - name: web\n    version: 1.4.1\n    repository: oci://ghcr.io/acme/charts\n")
    files = {".github/conveyor.yml": POLICY.replace("deploy/staging/{service}.yaml",
                                                    "charts/storefront/Chart.yaml"),
             "charts/storefront/Chart.yaml": umbrella,
             "charts/storefront/Chart.lock": "dependencies:\n- name: web\n  version: 1.4.1\n",
             "deploy/production/helmfile.yaml": PRODUCTION}
    world = await make_world(files=files, registry_endpoints={"ghcr.io": registry.url})
    try:
        digest = await push_chart(session, registry, "acme/charts/web", "web", "1.4.2")
        await publish_release(world.emulator, CHART, "acme/web", "1.4.2", digest,
                              publish_image=False)
        await world.settle()
        assert world.open_pulls() == []
        sha = world.emulator.commit("acme/web", "v1.4.2")["sha"]
        [run] = world.emulator.check_runs("acme/web", sha, "conveyor/promotion (staging)")
        assert "`charts/storefront/Chart.lock` records the dependency versions" in run[
            "output"]["summary"], run["output"]
    finally:
        await close_world(world)


FLUX_HELMRELEASE = """apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: acme-charts
  namespace: flux-system
spec:
  type: oci
  interval: 10m
  url: oci://ghcr.io/acme/charts
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: web
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: 1.4.1
      sourceRef:
        kind: HelmRepository
        name: acme-charts
        namespace: flux-system
"""

OCI_REPOSITORY = """apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 5m
  url: oci://ghcr.io/acme/charts/web
  ref:
    tag: 1.4.1
"""

UMBRELLA = """apiVersion: v2
name: storefront
version: 0.3.0
dependencies:
  - name: web
    version: 1.4.1
    repository: oci://ghcr.io/acme/charts
"""

PLACES = {
    "argocd": ("deploy/production/app.yaml", STAGING.replace("web-staging", "web-production")),
    "flux-helmrelease": ("deploy/production/release.yaml", FLUX_HELMRELEASE),
    "flux-ocirepository": ("deploy/production/source.yaml", OCI_REPOSITORY),
    "chart-dependency": ("charts/storefront/Chart.yaml", UMBRELLA),
    "helmfile": ("deploy/production/helmfile.yaml", PRODUCTION),
}


@pytest.mark.parametrize("place", sorted(PLACES))
async def test_every_place_of_a_chart_takes_the_promotion_and_passes_the_gate(
        place: str, registry: RegistryServer, session: aiohttp.ClientSession) -> None:
    path, text = PLACES[place]
    policy = POLICY.replace("deploy/production/helmfile.yaml", path)
    world = await make_world(files={".github/conveyor.yml": policy,
                                    "deploy/staging/web-chart.yaml": STAGING, path: text},
                             registry_endpoints={"ghcr.io": registry.url})
    try:
        digest = await push_chart(session, registry, "acme/charts/web", "web", "1.4.2")
        await publish_release(world.emulator, CHART, "acme/web", "1.4.2", digest,
                              publish_image=False)
        await world.settle()
        staging = world.pull("Promote web-chart 1.4.2 to staging")
        await reply(world, staging["number"], "/promote production")
        production = world.pull("Promote web-chart 1.4.2 to production")
        written = world.emulator.file(world.repo, path, production["head"]["ref"])
        expected = (text.replace("tag: 1.4.1", f"tag: 1.4.2\n    digest: {digest}")
                    if place == "flux-ocirepository" else
                    text.replace("1.4.1", "1.4.2"))
        assert written == expected
        gate = world.gate(production)
        assert gate["conclusion"] == "success", gate["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []
