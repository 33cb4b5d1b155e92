"""Where the status and the dashboard take "since" and "merged in" from, over HTTP: the commit
that changed each service's own reference (several services share one file), the branch read
at one commit (an archive when many blobs are new, single blobs after that)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.flows.test_dashboard import dashboards, fire_timers, row
from tests.harness import World, close_world, make_world

SHARED_POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
    tags: "semver:>=1.0.0"
  api:
    image: ghcr.io/acme/api
    source: acme/api
environments:
  - name: staging
    path: apps/overlays/staging/kustomization.yaml
    from: any
    auto_merge: true
  - name: production
    path: apps/overlays/prod/kustomization.yaml
    after: staging
    promote: manual
"""


def overlay(web: str, api: str) -> str:
    return ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n  - ../../base\nimages:\n"
            f'  - name: ghcr.io/acme/web\n    newTag: "{web}"\n'
            f'  - name: ghcr.io/acme/api\n    newTag: "{api}"\n')


SHARED_FILES = {
    ".github/conveyor.yml": SHARED_POLICY,
    "apps/overlays/staging/kustomization.yaml": overlay("0.9.0", "0.9.0"),
    "apps/overlays/prod/kustomization.yaml": overlay("0.9.0", "0.9.0"),
}
TARBALL = "/repos/{owner}/{repo}/tarball/{ref}"
BLOB = "/repos/{owner}/{repo}/git/blobs/{file_sha}"


@pytest.fixture
async def shared() -> AsyncIterator[World]:
    built = await make_world(files=SHARED_FILES)
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def test_a_service_nobody_promoted_keeps_its_own_since_in_a_shared_file(
        shared: World) -> None:
    world = shared
    seeded = world.emulator.commit(world.repo, "main")["sha"]
    await world.release("web", "1.4.2")
    staging = world.pull("Promote web 1.4.2 to staging")
    assert staging["merged"]
    await fire_timers(world)
    [issue] = dashboards(world)
    web, api = row(issue["body"], "web", "staging"), row(issue["body"], "api", "staging")
    assert web[1] == "`1.4.2`" and web[4] == f"#{staging['number']}"
    assert api[1] == "`0.9.0`"
    assert api[4] == "—", "api was not promoted: no PR put its reference there"
    assert seeded in api[3], "api's since is the commit that set 0.9.0, not web's merge"

    # A person changes api's tag by hand: api dates from that commit, web keeps its PR.
    await world.emulator.push_files(world.repo, {
        "apps/overlays/staging/kustomization.yaml": world.emulator.file(
            world.repo, "apps/overlays/staging/kustomization.yaml").replace(  # type: ignore[union-attr]
            'newTag: "0.9.0"', 'newTag: "0.9.1"')}, author="bob", message="api 0.9.1 by hand")
    by_hand = world.emulator.commit(world.repo, "main")["sha"]
    await world.settle()
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    gh = await ctx.clients.installation(world.demo.installation_id)
    repo = await capabilities.policies.get(gh, world.demo.installation_id, world.repo)
    assert repo is not None
    rows = {(r.service, r.environment): r for r in await capabilities.status.collect(gh, repo)}
    assert rows[("api", "staging")].version == "0.9.1"
    assert rows[("api", "staging")].since_commit == by_hand
    assert rows[("api", "staging")].pull_number is None
    assert rows[("web", "staging")].pull_number == staging["number"]
    assert rows[("web", "staging")].since_commit == staging["merge_commit_sha"]
    assert rows[("api", "production")].since_commit == seeded


async def test_many_new_blobs_come_in_one_archive_and_a_change_in_one_blob(
        world: World) -> None:
    files = {f"apps/svc-{n:02d}/overlays/staging/kustomization.yaml": overlay("0.9.0", f"0.9.{n}")
             .replace("ghcr.io/acme/api", f"ghcr.io/acme/svc-{n:02d}") for n in range(12)}
    services = "".join(f"  svc-{n:02d}:\n    image: ghcr.io/acme/svc-{n:02d}\n"
                       f"    source: acme/svc-{n:02d}\n" for n in range(12))
    policy = SHARED_POLICY.replace("services:\n", "services:\n" + services).replace(
        "apps/overlays/staging", "apps/{service}/overlays/staging").replace(
        "apps/overlays/prod", "apps/{service}/overlays/prod")
    requests = world.emulator.requests
    requests.reset()
    await world.emulator.push_files(world.repo, {".github/conveyor.yml": policy, **files})
    await world.settle()
    runtime = world.conveyor
    gh = await runtime.ctx.clients.installation(world.demo.installation_id)
    repo = await runtime.capabilities.policies.get(gh, world.demo.installation_id, world.repo)
    assert repo is not None and repo.policy is not None and "svc-11" in repo.policy.services

    # The push's config check builds the new overlays and the status reads the same files:
    # one archive for both, kept by blob sha.
    rows = await runtime.capabilities.status.collect(gh, repo)
    assert requests.count("GET", TARBALL) == 1
    assert requests.count("GET", BLOB) == 0
    found = {(r.service, r.environment): r for r in rows}
    assert found[("svc-07", "staging")].version == "0.9.7"

    requests.reset()
    await world.emulator.push_files(world.repo, {
        "apps/svc-03/overlays/staging/kustomization.yaml":
            files["apps/svc-03/overlays/staging/kustomization.yaml"].replace("0.9.3", "1.0.0")})
    await world.settle()
    rows = await runtime.capabilities.status.collect(gh, repo)
    assert requests.count("GET", TARBALL) == 0
    assert requests.count("GET", BLOB) == 1
    assert {(r.service, r.environment): r for r in rows}[("svc-03", "staging")].version == \
        "1.0.0"
