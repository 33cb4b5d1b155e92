"""Promotion PRs from releases and published images over HTTP."""

from __future__ import annotations

from bot.domain.promotions.marker import parse_marker
from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY, digest_of
from tests.harness import World, close_world, make_world

STAGING = "apps/web/overlays/staging/kustomization.yaml"


def prs(world: World, state: str = "all") -> list[dict]:
    return world.emulator.pulls(world.repo, state=state)


async def test_package_then_release_opens_one_pr(world: World) -> None:
    digest = await world.release("web", "1.1.0")  # publishes the image, then the release
    assert len(prs(world)) == 1
    pr = prs(world)[0]
    assert pr["title"] == "Promote web 1.1.0 to staging"
    assert sorted(label["name"] for label in pr["labels"]) == ["conveyor", "env/staging"]
    marker = parse_marker(pr["body"])
    assert marker is not None and marker.digest == digest
    commit = world.emulator.commit(world.repo, pr["head"]["sha"])
    message = commit["commit"]["message"]
    assert f"Conveyor-Digest: {digest}" in message
    assert "Conveyor-Service: web" in message and "Conveyor-Environment: staging" in message
    # github.com signs it; a GitHub Enterprise Server without web commit signing does not
    signed = world.emulator.world.web_commit_signing
    assert commit["commit"]["verification"]["verified"] is signed


async def test_release_before_image_waits_for_the_package_event() -> None:
    policy = DEMO_POLICY.replace("    from: any\n", "    from: release\n")
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})
    try:
        await world.emulator.create_tag("acme/web", "v1.2.0")
        await world.emulator.publish_release("acme/web", "v1.2.0", author="alice")
        await world.settle()
        assert prs(world) == []
        digest = digest_of("late")
        await world.emulator.publish_container("acme", "web", digest, ["1.2.0"],
                                               source_repo="acme/web")
        await world.settle()
        pr = world.pull("Promote web 1.2.0 to staging")
        marker = parse_marker(pr["body"])
        assert marker is not None and marker.release_tag == "v1.2.0"
        assert marker.requester == "alice"
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_package_only_environment_ignores_releases() -> None:
    policy = DEMO_POLICY.replace("    from: any\n", "    from: package\n")
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})
    try:
        await world.emulator.create_tag("acme/web", "v1.2.1")
        await world.emulator.publish_container("acme", "web", digest_of("p"), ["1.2.1"],
                                               source_repo="acme/web", emit=False)
        await world.emulator.publish_release("acme/web", "v1.2.1", author="alice")
        await world.settle()
        assert prs(world) == []
    finally:
        await close_world(world)


async def test_duplicate_and_redelivered_events_open_nothing_new(world: World) -> None:
    await world.release("web", "1.3.0")
    before = world.emulator.requests.count()
    delivery = next(d for d in world.emulator.deliveries
                    if d.event == "release" and d.action == "released")
    status = await world.emulator.redeliver(delivery.id)
    await world.settle()
    assert status == 202
    assert len(prs(world)) == 1
    # a redelivery reuses the delivery id: the bot answers without any GitHub request
    assert world.emulator.requests.count() == before


async def test_multi_arch_push_promotes_the_manifest_list_once(world: World) -> None:
    digest = digest_of("list")
    await world.emulator.publish_container("acme", "web", digest, ["1.4.0"],
                                           source_repo="acme/web")
    await world.settle()
    # GHCR sent the two platforms' untagged events first; only the tagged index counts
    events = [d for d in world.emulator.deliveries if d.event == "registry_package"]
    assert len(events) == 3
    pulls = prs(world)
    assert len(pulls) == 1
    assert parse_marker(pulls[0]["body"]).digest == digest  # type: ignore[union-attr]


async def test_untagged_push_is_ignored(world: World) -> None:
    await world.emulator.publish_container("acme", "web", digest_of("untagged"), [],
                                           source_repo="acme/web")
    await world.settle()
    assert prs(world) == []


async def test_tag_outside_the_semver_policy_is_refused(world: World) -> None:
    await world.emulator.publish_container("acme", "web", digest_of("old"), ["0.5.0"],
                                           source_repo="acme/web")
    await world.emulator.publish_container("acme", "web", digest_of("pre"), ["2.0.0-rc.1"],
                                           source_repo="acme/web")
    await world.settle()
    assert prs(world) == []


async def test_image_from_another_repository_is_ignored(world: World) -> None:
    await world.emulator.publish_container("acme", "web", digest_of("evil"), ["1.5.0"],
                                           source_repo="acme/api")
    await world.settle()
    assert prs(world) == []


async def test_newer_digest_supersedes_and_older_never_does() -> None:
    policy = DEMO_POLICY.replace("    auto_merge: true\n", "")
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})
    try:
        await world.release("web", "1.6.0")
        old = world.pull("web 1.6.0")
        await world.release("web", "1.7.0")
        new = world.pull("web 1.7.0")
        old = world.pull("web 1.6.0")
        assert old["state"] == "closed" and not old["merged"]
        comments = world.emulator.comments(world.repo, old["number"])
        assert any(f"Superseded by #{new['number']}" in c["body"] for c in comments)
        assert old["head"]["ref"] not in world.emulator.branches(world.repo)
        await world.release("web", "1.6.5")
        assert [pr["title"] for pr in prs(world, "open")] == ["Promote web 1.7.0 to staging"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_helm_and_kustomize_services_in_one_policy(world: World) -> None:
    web = await world.release("web", "1.8.0")
    api = await world.release("api", "2.0.0")
    web_text = world.emulator.file(world.repo, STAGING)
    api_text = world.emulator.file(world.repo, "charts/api/values-staging.yaml")
    assert web_text is not None and f"digest: {web}" in web_text
    assert api_text is not None and f'tag: "2.0.0@{api}"' in api_text
    # production files untouched
    assert world.emulator.file(world.repo, "charts/api/values-production.yaml") == \
        DEMO_FILES["charts/api/values-production.yaml"]


async def test_downstream_auto_promotion_after_merge() -> None:
    policy = DEMO_POLICY.replace("    promote: manual\n", "    promote: auto\n")
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})
    try:
        digest = await world.release("web", "1.9.0")
        production = world.pull("Promote web 1.9.0 to production", state="open")
        assert parse_marker(production["body"]).digest == digest  # type: ignore[union-attr]
        assert world.gate(production)["conclusion"] == "failure"  # not deployed yet
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_refusal_is_reported_on_the_source_commit() -> None:
    files = dict(DEMO_FILES)
    files["apps/web/overlays/staging/kustomization.yaml"] = "resources:\n  - ../../base\n"
    world = await make_world(files=files)
    try:
        await world.release("web", "1.10.0")
        assert prs(world) == []
        sha = world.emulator.commit("acme/web", "v1.10.0")["sha"]
        runs = world.emulator.check_runs("acme/web", sha, "conveyor/promotion (staging)")
        assert len(runs) == 1
        assert runs[0]["conclusion"] == "failure"
        assert "ghcr.io/acme/web" in runs[0]["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_monorepo_release_feeds_only_the_service_it_names() -> None:
    policy = DEMO_POLICY.replace("    source: acme/api\n", "    source: acme/web\n")
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})
    try:
        digest = digest_of("api-1.5.0")
        await world.emulator.publish_container("acme", "api", digest, ["1.5.0"],
                                               source_repo="acme/web", emit=False)
        await world.emulator.create_tag("acme/web", "api-v1.5.0")
        await world.emulator.publish_release("acme/web", "api-v1.5.0", author="alice")
        await world.settle()
        assert [pr["title"] for pr in prs(world)] == ["Promote api 1.5.0 to staging"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []
