"""A policy file over the 1 MB GitHub's contents API serves, over HTTP against the emulator:
GitHub answers 403 for it, and the repository is a broken policy that names the file and its
size (the gate fails and says so) instead of a delivery that errors on every event."""

from __future__ import annotations

from bot.names import POLICY_PATH
from bot.promotion.policies import BrokenPolicy
from bot.sandbox.demo import DEMO_FILES
from tests.flows.test_broken_policy import STAGING, indexed
from tests.harness import close_world, hand_pr, make_world

PADDED = DEMO_FILES[POLICY_PATH] + "# " + "x" * (1024 * 1024) + "\n"


async def test_a_policy_larger_than_github_serves_is_a_broken_policy() -> None:
    world = await make_world(files={**DEMO_FILES, POLICY_PATH: PADDED})
    try:
        repo = await indexed(world)
        assert isinstance(repo, BrokenPolicy)
        assert [(i.path, i.line, i.message) for i in repo.issues] == [
            (POLICY_PATH, 1, f"{POLICY_PATH} is larger than the 1 MB GitHub returns through "
                             "the contents API")]
        pr = await hand_pr(world, STAGING, DEMO_FILES[STAGING] + "# by hand\n")
        gate = world.gate(pr)
        assert gate["conclusion"] == "failure"
        assert gate["output"]["title"] == f"The policy {POLICY_PATH} is invalid"
    finally:
        await close_world(world)
    assert world.emulator.violations == []
