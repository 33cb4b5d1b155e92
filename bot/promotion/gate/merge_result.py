"""What merging a pull request makes, for the gate's renders: read from GitHub at every
evaluation, because the default branch moves on while a PR is open.

The PR's `base.sha` is the default branch as it was when the PR's head last changed, and GitHub
merges into the branch as it is now. "Compare two commits" of the default branch with the head
says both: the branch's commit now (`base_commit`), how many of its commits the head lacks
(`behind_by`) and where the two parted (`merge_base_commit`). A head that lacks none is what the
merge makes; otherwise the merge is worked out file by file from the three trees
(`bot.promotion.merged_tree`), and a file both sides changed differently is named, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.promotion.builds import RepoBuilds
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo


@dataclass(frozen=True)
class MergeResult:
    """The trees a PR's renders are judged between: the default branch now (``before``) and
    what the merge makes (``after``: the head, or the key of a merge `RepoBuilds` renders).
    ``conflicts``: files both sides changed differently since the branch was made;
    ``problem``: why what the merge makes cannot be read (the renders fail closed)."""

    before: str
    after: str
    behind: int = 0
    conflicts: frozenset[str] = frozenset()
    problem: str | None = None


async def merge_result(gh: GitHubAPI, builds: RepoBuilds, repo: DeploymentRepo,
                       facts: PullFacts) -> MergeResult:
    """What merging the PR of ``facts`` into ``repo``'s default branch makes now."""
    branch = repo.default_branch
    try:
        found = await gh.getitem(f"/repos/{repo.full_name}/compare/"
                                 f"{quote(branch, safe='')}...{facts.head_sha}")
    except gidgethub.BadRequest as exc:
        if exc.status_code not in (404, 422):
            raise
        return MergeResult(facts.base_sha, facts.head_sha, problem=(
            f"GitHub does not compare this head with `{branch}` ({exc.status_code}): what the "
            "merge makes cannot be read"))
    tip, ancestor = _sha(found, "base_commit"), _sha(found, "merge_base_commit")
    behind = found.get("behind_by")
    if tip is None or ancestor is None or not isinstance(behind, int) or behind < 0:
        return MergeResult(facts.base_sha, facts.head_sha, problem=(
            f"GitHub's comparison of this head with `{branch}` is not one Conveyor reads: "
            "what the merge makes cannot be read"))
    if behind == 0:
        return MergeResult(tip, facts.head_sha)
    merge = await builds.merged(tip, facts.head_sha, ancestor)
    return MergeResult(tip, merge.key, behind, merge.tree.conflicts)


def _sha(found: Any, key: str) -> str | None:
    commit = found.get(key) if isinstance(found, dict) else None
    sha = commit.get("sha") if isinstance(commit, dict) else None
    return sha if isinstance(sha, str) and len(sha) == 40 else None
