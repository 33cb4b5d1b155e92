"""Release → entry environment promotion, over HTTP against the emulator."""

from __future__ import annotations

from tests.harness import World


async def test_release_opens_and_auto_merges_staging(world: World) -> None:
    digest = await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    assert staging["head"]["ref"] == f"conveyor/staging/web-{digest[7:19]}"
    assert staging["merged"] is True
    text = world.emulator.file(world.repo, "apps/web/overlays/staging/kustomization.yaml")
    assert text is not None
    assert f"digest: {digest}" in text
    assert 'newTag: "1.0.0"' in text


async def test_the_gate_of_a_commit_just_made_is_posted_without_looking_for_one(
        world: World) -> None:
    """One process (no Redis): only it can have posted a gate on the commit it has just made,
    and it remembers what it posted, so it does not ask GitHub for the commit's check runs."""
    await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    head = staging["head"]["sha"]
    assert len(world.emulator.check_runs(world.repo, head, "conveyor/promotion-gate")) == 1
    asked = [entry.url_path for entry in world.emulator.requests.entries
             if entry.path == "/repos/{owner}/{repo}/commits/{ref}/check-runs"]
    assert not [path for path in asked if head in path], asked
