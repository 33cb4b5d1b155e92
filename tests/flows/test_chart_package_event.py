"""A chart pushed to GHCR: the `registry_package` event GHCR sends for any OCI artifact (a
container package) opens the staging promotion of a chart service, a Flux OCIRepository is
pinned by tag and digest, and `/rollback` goes back to the chart that ran before."""

from __future__ import annotations

from conveyor_emulator.images import build_chart
from tests.harness import close_world, make_world

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
        await world.emulator.publish_container("acme", "charts/web", before.digest, ["1.4.1"],
                                               source_repo="acme/web", emit=False)
        chart = build_chart("web", "1.4.2", source="https://github.com/acme/web")
        await world.emulator.publish_container("acme", "charts/web", chart.digest, ["1.4.2"],
                                               source_repo="acme/web")
        await world.settle()
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
