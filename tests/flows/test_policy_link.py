"""A policy file that is a symbolic link, over HTTP against the emulator: the contents API
follows a link to a regular file and answers with that file, so Conveyor would serve a policy
from a path the policy gate does not watch. The link is refused: the last valid policy keeps
serving, and a repository whose policy never was a file is a broken policy."""

from __future__ import annotations

from bot.names import POLICY_PATH
from bot.promotion.policies import BrokenPolicy, DeploymentRepo
from bot.sandbox.demo import DEMO_FILES
from tests.flows.test_broken_policy import STAGING, indexed
from tests.harness import DEPLOY_REPO, close_world, hand_pr, make_world

ELSEWHERE = "ops/conveyor.yml"


def issues(repo: DeploymentRepo | BrokenPolicy | None) -> list[tuple[str, int, str]]:
    assert repo is not None
    return [(issue.path, issue.line, issue.message) for issue in repo.issues]


async def test_a_policy_file_turned_into_a_link_is_refused() -> None:
    world = await make_world()
    try:
        assert isinstance(await indexed(world), DeploymentRepo)
        loose = DEMO_FILES[POLICY_PATH].replace("production", "prod-free")
        await world.emulator.push_files(DEPLOY_REPO, {ELSEWHERE: loose},
                                        symlinks={POLICY_PATH: "../" + ELSEWHERE},
                                        message="Move the policy", author="alice")
        await world.settle()
        repo = await indexed(world)
        assert isinstance(repo, DeploymentRepo)  # the last valid policy keeps serving
        assert "production" in repo.policy.environments
        assert issues(repo) == [(POLICY_PATH, 1, f"{POLICY_PATH} is a symbolic link to "
                                                 f"{ELSEWHERE}")]

        await world.emulator.push_files(DEPLOY_REPO, {},
                                        symlinks={POLICY_PATH: "../gone.yml"},
                                        message="Point the policy nowhere", author="alice")
        await world.settle()
        repo = await indexed(world)
        assert isinstance(repo, DeploymentRepo)
        assert issues(repo) == [(POLICY_PATH, 1, f"{POLICY_PATH} is not a regular file "
                                                 "(GitHub calls it a symlink)")]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_policy_that_never_was_a_file_is_a_broken_policy() -> None:
    world = await make_world(files={**DEMO_FILES, ELSEWHERE: DEMO_FILES[POLICY_PATH]})
    try:
        await world.emulator.push_files(DEPLOY_REPO, {POLICY_PATH: None},
                                        message="Remove the policy", author="alice")
        await world.settle()
        await world.emulator.push_files(DEPLOY_REPO, {},
                                        symlinks={POLICY_PATH: "../" + ELSEWHERE},
                                        message="Link the policy", author="alice")
        await world.settle()
        repo = await indexed(world)
        assert isinstance(repo, BrokenPolicy)
        assert issues(repo) == [(POLICY_PATH, 1, f"{POLICY_PATH} is a symbolic link to "
                                                 f"{ELSEWHERE}")]
        pr = await hand_pr(world, STAGING, DEMO_FILES[STAGING] + "# by hand\n")
        gate = world.gate(pr)
        assert gate["conclusion"] == "failure"
        assert gate["output"]["title"] == f"The policy {POLICY_PATH} is invalid"
    finally:
        await close_world(world)
    assert world.emulator.violations == []
