"""A release or an image whose tag the service's tag policy does not admit opens nothing, over
HTTP against the emulator (the demo's web admits semver:>=1.0.0); the next admitted release
promotes as usual."""

from __future__ import annotations

import logging

import pytest

from bot.sandbox.demo import digest_of
from tests.harness import World


async def test_a_release_the_tag_policy_refuses_opens_nothing(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.handlers.releases")
    await world.release("web", "0.9.1")
    assert world.open_pulls() == []
    assert world.emulator.pulls(world.repo, state="all") == []
    refused = [r for r in caplog.records
               if r.getMessage() == "release tag not admitted by the service's tag policy"]
    assert [(r.service, r.tag) for r in refused] == [("web", "v0.9.1")]  # type: ignore[attr-defined]
    await world.release("web", "1.0.0")
    assert world.pull("Promote web 1.0.0 to staging")["merged"]


async def test_an_image_the_tag_policy_refuses_opens_nothing(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="bot.promotion.triggers.packages")
    await world.emulator.publish_container("acme", "web", digest_of("web:0.9.2"), ["0.9.2"],
                                           source_repo="acme/web")
    await world.settle()
    assert world.emulator.pulls(world.repo, state="all") == []
    refused = [r for r in caplog.records
               if r.getMessage() == "image tag not admitted by the service's tag policy"]
    # GitHub sends the package and registry_package twins: either may say it
    assert {(r.service, r.tag) for r in refused} == {("web", "0.9.2")}  # type: ignore[attr-defined]
