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
