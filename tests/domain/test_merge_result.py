"""What the gate makes of GitHub's comparison of the default branch with a PR's head."""

from __future__ import annotations

import http
from typing import Any, cast

import gidgethub
import pytest
from gidgethub.abc import GitHubAPI

from bot.promotion.builds import RepoBuilds
from bot.promotion.gate.merge_result import merge_result
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo

HEAD, STALE, TIP = "a" * 40, "b" * 40, "c" * 40


class Answers:
    """A GitHub that answers the comparison (or refuses it) and nothing else."""

    def __init__(self, answer: Any = None, status: int | None = None) -> None:
        self.answer, self.status = answer, status
        self.asked: list[str] = []

    async def getitem(self, url: str) -> Any:
        self.asked.append(url)
        if self.status is not None:
            raise gidgethub.BadRequest(http.HTTPStatus(self.status))
        return self.answer


def facts() -> PullFacts:
    return PullFacts(number=7, head_sha=HEAD, base_sha=STALE, author="alice", labels=(),
                     marker=None, html_url="", state="open")


async def judged(gh: Answers) -> Any:
    repo = cast(DeploymentRepo, type("Repo", (), {"full_name": "acme/deploy",
                                                 "default_branch": "release/2026"})())
    builds = cast(RepoBuilds, None)  # not reached: the head holds the branch or it is refused
    return await merge_result(cast(GitHubAPI, gh), builds, repo, facts())


async def test_a_head_that_holds_the_branch_is_judged_against_the_branch_as_it_is_now() -> None:
    gh = Answers({"base_commit": {"sha": TIP}, "merge_base_commit": {"sha": TIP},
                  "behind_by": 0})
    found = await judged(gh)
    assert (found.before, found.after, found.problem) == (TIP, HEAD, None)
    assert gh.asked == [f"/repos/acme/deploy/compare/release%2F2026...{HEAD}"]


@pytest.mark.parametrize("status", [404, 422])
async def test_a_comparison_github_refuses_fails_the_renders_closed(status: int) -> None:
    found = await judged(Answers(status=status))
    assert found.problem == (f"GitHub does not compare this head with `release/2026` ({status}): "
                             "what the merge makes cannot be read")


@pytest.mark.parametrize("answer", [
    [], {"base_commit": {"sha": TIP}, "behind_by": 0},
    {"base_commit": {"sha": "short"}, "merge_base_commit": {"sha": TIP}, "behind_by": 0},
    {"base_commit": {"sha": TIP}, "merge_base_commit": {"sha": TIP}, "behind_by": "0"},
    {"base_commit": {"sha": TIP}, "merge_base_commit": {"sha": TIP}, "behind_by": -1}])
async def test_a_comparison_conveyor_cannot_read_fails_the_renders_closed(answer: Any) -> None:
    found = await judged(Answers(answer))
    assert found.problem is not None and "what the merge makes cannot be read" in found.problem
