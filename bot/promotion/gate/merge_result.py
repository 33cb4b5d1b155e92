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

from collections.abc import Iterable
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
    ancestor: str = ""  # the merge base, where the head is behind
    conflicts: frozenset[str] = frozenset()
    problem: str | None = None

    def conflicting(self, paths: Iterable[str], branch: str) -> str | None:
        """Why a render or a pointer that reads ``paths`` cannot be judged: one of them both
        sides changed differently (git merges its lines, which neither side shows); None
        when none is."""
        both = sorted(self.conflicts.intersection(paths))
        if not both:
            return None
        return (f"`{both[0]}` changed both on `{branch}` and on this branch since it was made: "
                f"what the merge makes of it is not judged. Update the branch with `{branch}` "
                "and the gate judges the result")


async def merge_result(gh: GitHubAPI, builds: RepoBuilds, repo: DeploymentRepo,
                       facts: PullFacts, known: MergeResult | None = None) -> MergeResult:
    """What merging the PR of ``facts`` into ``repo``'s default branch makes now; ``known``:
    the answer an earlier reader of the same evaluation got, made renderable by ``builds``
    without asking GitHub again."""
    if known is not None:
        if known.ancestor:
            await builds.merged(known.before, facts.head_sha, known.ancestor)
        return known
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
    behind = found.get("behind_by") if isinstance(found, dict) else None
    if tip is None or ancestor is None or not isinstance(behind, int) or behind < 0:
        return MergeResult(facts.base_sha, facts.head_sha, problem=(
            f"GitHub's comparison of this head with `{branch}` is not one Conveyor reads: "
            "what the merge makes cannot be read"))
    if behind == 0:
        return MergeResult(tip, facts.head_sha)
    merge = await builds.merged(tip, facts.head_sha, ancestor)
    return MergeResult(tip, merge.key, ancestor, merge.tree.conflicts)


def _sha(found: Any, key: str) -> str | None:
    commit = found.get(key) if isinstance(found, dict) else None
    sha = commit.get("sha") if isinstance(commit, dict) else None
    return sha if isinstance(sha, str) and len(sha) == 40 else None
