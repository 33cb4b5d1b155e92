"""Promotions into the places images live besides overlays, over HTTP: an Argo CD Application
holding the pin, and a chart whose tag key is `version` (the service's tag_key)."""

from __future__ import annotations

from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY
from tests.harness import close_world, make_world

APPLICATION = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web-staging
spec:
  source:
    repoURL: https://github.com/acme/deploy.git
    path: apps/web/overlays/staging
    kustomize:
      images:
        - web=ghcr.io/acme/web:1.0.0   # the overlay names the image "web"
"""
API_VALUES = """\
image:
  repository: ghcr.io/acme/api
  version: 1.0.0     # this chart reads .version
  pullPolicy: IfNotPresent
"""


async def test_promotions_edit_an_application_and_a_version_key() -> None:
    policy = DEMO_POLICY.replace(
        "path: apps/{service}/overlays/staging/kustomization.yaml",
        "path: argocd/{service}-staging.yaml",
    ).replace("    source: acme/api\n", "    source: acme/api\n    tag_key: version\n")
    helpers = "charts/api/templates/_helpers.tpl"
    files = {**DEMO_FILES, ".github/conveyor.yml": policy,
             "argocd/web-staging.yaml": APPLICATION,
             "charts/api/values-staging.yaml": API_VALUES,
             # the chart's templates read the image's version from `version:`
             helpers: DEMO_FILES[helpers].replace(".tag", ".version"),
             "charts/api/values.yaml": DEMO_FILES["charts/api/values.yaml"].replace(
                 "  tag:", "  version:")}
    world = await make_world(files=files)
    try:
        web = await world.release("web", "1.4.2")
        api = await world.release("api", "2.1.0")
        pr = world.pull("Promote web 1.4.2 to staging")
        assert world.emulator.file(world.repo, "argocd/web-staging.yaml",
                                   ref=pr["head"]["sha"]) == APPLICATION.replace(
            "web:1.0.0", f"web:1.4.2@{web}")
        pr = world.pull("Promote api 2.1.0 to staging")
        assert world.emulator.file(world.repo, "charts/api/values-staging.yaml",
                                   ref=pr["head"]["sha"]) == API_VALUES.replace(
            "version: 1.0.0", f"version: 2.1.0@{api}")
    finally:
        await close_world(world)
    assert world.emulator.violations == []
