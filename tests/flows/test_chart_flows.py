"""Charts on the emulated GHCR: the `registry_package` event GHCR sends for any OCI artifact (a
container package) opens the staging promotion of a chart service, a Flux OCIRepository is
pinned by tag and digest, `/rollback` goes back to the chart that ran before, and a release
train moves a chart and an image together."""

from __future__ import annotations

from bot.sandbox.demo import digest_of
from conveyor_emulator.registry.images import Image, build_chart
from tests.flows.gitops import ArgoCD
from tests.harness import World, close_world, make_world

POLICY = """version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web-chart:
    chart: ghcr.io/acme/charts/web
    source: acme/web
environments:
  - name: staging
    path: clusters/staging/web-chart.yaml
    from: package
    auto_merge: true
"""


async def push_after(world: World, before: Image) -> Image:
    """1.4.1 was pushed long ago (no event now); CI pushes 1.4.2 and GHCR announces it."""
    await world.emulator.publish_container("acme", "charts/web", before.digest, ["1.4.1"],
                                           source_repo="acme/web", emit=False)
    chart = build_chart("web", "1.4.2", source="https://github.com/acme/web")
    await world.emulator.publish_container("acme", "charts/web", chart.digest, ["1.4.2"],
                                           source_repo="acme/web")
    await world.settle()
    return chart


def oci_repository(tag: str, digest: str) -> str:
    return f"""apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: flux-system
spec:
  interval: 5m
  url: oci://ghcr.io/acme/charts/web
  ref:
    tag: {tag}
    digest: {digest}
"""


async def test_a_chart_package_event_promotes_and_rolls_back() -> None:
    before = build_chart("web", "1.4.1", source="https://github.com/acme/web")
    world = await make_world(files={
        ".github/conveyor.yml": POLICY,
        "clusters/staging/web-chart.yaml": oci_repository("1.4.1", before.digest)})
    try:
        chart = await push_after(world, before)
        staging = world.pull("Promote web-chart 1.4.2 to staging")
        assert staging["merged"]
        assert world.emulator.file(world.repo, "clusters/staging/web-chart.yaml") == \
            oci_repository("1.4.2", chart.digest)

        posted = await world.emulator.comment(world.repo, staging["number"], "alice",
                                              "/rollback web-chart staging")
        await world.settle()
        back = world.pull("Roll back web-chart in staging")
        text = world.emulator.file(world.repo, "clusters/staging/web-chart.yaml",
                                   back["head"]["ref"] if not back["merged"] else None)
        assert text == oci_repository("1.4.1", before.digest), posted
    finally:
        await close_world(world)
    assert world.emulator.violations == []


MIXED = """version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
  web-chart:
    chart: ghcr.io/acme/charts/web
    source: acme/web
groups:
  storefront: [web, web-chart]
environments:
  - name: staging
    path: deploy/staging/{service}.yaml
    from: package
    auto_merge: true
  - name: production
    path: deploy/production/{service}.yaml
    after: staging
    evidence: [merged]
"""


def application(env: str, version: str) -> str:
    return f"""apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web-{env}
spec:
  project: default
  source:
    repoURL: ghcr.io/acme/charts
    chart: web
    targetRevision: {version}
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"""


def deployment(image: str) -> str:
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n"
            "  template:\n    spec:\n      containers:\n        - name: web\n"
            f"          image: {image}\n")


async def test_a_train_moves_a_chart_and_an_image_together() -> None:
    old = "ghcr.io/acme/web:1.0.0@" + digest_of("ghcr.io/acme/web:1.0.0")
    world = await make_world(files={
        ".github/conveyor.yml": MIXED,
        "deploy/staging/web.yaml": deployment(old),
        "deploy/production/web.yaml": deployment(old),
        "deploy/staging/web-chart.yaml": application("staging", "1.4.1"),
        "deploy/production/web-chart.yaml": application("production", "1.4.1")})
    try:
        image = digest_of("web:1.1.0")
        await world.emulator.publish_container("acme", "web", image, ["1.1.0"],
                                               source_repo="acme/web")
        chart = build_chart("web", "1.4.2", source="https://github.com/acme/web")
        await world.emulator.publish_container("acme", "charts/web", chart.digest, ["1.4.2"],
                                               source_repo="acme/web")
        await world.settle()
        assert world.pull("Promote web 1.1.0 to staging")["merged"]
        assert world.pull("Promote web-chart 1.4.2 to staging")["merged"]

        issue = await world.emulator.open_issue(world.repo, "Ship", author="alice")
        await world.emulator.comment(world.repo, issue["number"], "alice",
                                     "/promote production storefront")
        await world.settle()
        train = world.pull("Promote storefront to production (2 services)")
        ref = train["head"]["ref"]
        assert world.emulator.file(world.repo, "deploy/production/web-chart.yaml", ref) == \
            application("production", "1.4.2")
        assert image in str(world.emulator.file(world.repo, "deploy/production/web.yaml", ref))
        gate = world.gate(train)
        assert gate["conclusion"] == "success", gate["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_chart_named_by_version_alone_rolls_back_to_what_conveyor_wrote() -> None:
    """A version-only place (an Argo CD targetRevision) holds no digest: the digest a version
    ran as is the one Conveyor's promotion wrote with it. 1.4.1 came by hand (not known: no
    rollback to it); 1.4.2 came by Conveyor, so `/rollback` after 1.4.3 goes back to it."""
    policy = POLICY.replace("clusters/staging/web-chart.yaml", "deploy/staging/web-chart.yaml")
    world = await make_world(files={".github/conveyor.yml": policy,
                                    "deploy/staging/web-chart.yaml":
                                        application("staging", "1.4.1")})
    try:
        before = build_chart("web", "1.4.1", source="https://github.com/acme/web")
        second = await push_after(world, before)
        staging = world.pull("Promote web-chart 1.4.2 to staging")
        posted = await world.emulator.comment(world.repo, staging["number"], "alice",
                                              "/rollback web-chart staging 1.4.1")
        await world.settle()
        replies = [c["body"] for c in world.emulator.comments(world.repo, staging["number"])
                   if c["id"] > posted["id"]]
        assert any("web-chart 1.4.1 ran in staging but was not pinned by digest, so Conveyor "
                   "cannot prove what ran" in body for body in replies), replies

        third = build_chart("web", "1.4.3", source="https://github.com/acme/web")
        await world.emulator.publish_container("acme", "charts/web", third.digest, ["1.4.3"],
                                               source_repo="acme/web")
        await world.settle()
        assert world.emulator.file(world.repo, "deploy/staging/web-chart.yaml") == \
            application("staging", "1.4.3")
        await world.emulator.comment(world.repo, staging["number"], "alice",
                                     "/rollback web-chart staging")
        await world.settle()
        back = world.pull("Roll back web-chart in staging")
        assert back["merged"], back
        assert second.digest in back["body"]
        assert world.emulator.file(world.repo, "deploy/staging/web-chart.yaml") == \
            application("staging", "1.4.2")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_chart_reported_failing_is_rolled_back_by_itself() -> None:
    watched = POLICY.replace("    auto_merge: true\n", "    auto_merge: true\n"
                             "    on_failure: rollback\n"
                             "    deployed_context: argocd/{service}-{env}\n"
                             '    deployed_by: ["argocd-notifications[bot]"]\n')
    before = build_chart("web", "1.4.1", source="https://github.com/acme/web")
    world = await make_world(files={
        ".github/conveyor.yml": watched,
        "clusters/staging/web-chart.yaml": oci_repository("1.4.1", before.digest)})
    argocd = ArgoCD(world)
    argocd.install()
    try:
        await push_after(world, before)
        staging = world.pull("Promote web-chart 1.4.2 to staging")
        await argocd.status("web-chart-staging", staging["merge_commit_sha"], "failure")
        back = world.pull("Roll back web-chart in staging")
        assert back["merged"]
        assert world.emulator.file(world.repo, "clusters/staging/web-chart.yaml") == \
            oci_repository("1.4.1", before.digest)
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_chart_named_by_version_reported_failing_goes_back_to_what_conveyor_wrote(
        ) -> None:
    watched = POLICY.replace("clusters/staging/web-chart.yaml", "deploy/staging/web-chart.yaml")
    watched = watched.replace("    auto_merge: true\n", "    auto_merge: true\n"
                              "    on_failure: rollback\n"
                              "    deployed_context: argocd/{service}-{env}\n"
                              '    deployed_by: ["argocd-notifications[bot]"]\n')
    world = await make_world(files={".github/conveyor.yml": watched,
                                    "deploy/staging/web-chart.yaml":
                                        application("staging", "1.4.1")})
    argocd = ArgoCD(world)
    argocd.install()
    try:
        second = await push_after(world, build_chart("web", "1.4.1",
                                                     source="https://github.com/acme/web"))
        third = build_chart("web", "1.4.3", source="https://github.com/acme/web")
        await world.emulator.publish_container("acme", "charts/web", third.digest, ["1.4.3"],
                                               source_repo="acme/web")
        await world.settle()
        newest = world.pull("Promote web-chart 1.4.3 to staging")
        await argocd.status("web-chart-staging", newest["merge_commit_sha"], "failure")
        back = world.pull("Roll back web-chart in staging")
        assert back["merged"] and second.digest in back["body"]
        assert world.emulator.file(world.repo, "deploy/staging/web-chart.yaml") == \
            application("staging", "1.4.2")
    finally:
        await close_world(world)
    assert world.emulator.violations == []
