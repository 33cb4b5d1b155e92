"""What merging a pull request would do right now: whether it can merge, the merged
tree, and the commits and diff it brings."""

from __future__ import annotations

from typing import Any

from conveyor_emulator.checks.required_checks import failing_checks, missing_required
from conveyor_emulator.store.gitstore import MergeConflict
from conveyor_emulator.store.state import Issue, Repo


def merge_info(repo: Repo, item: Issue) -> tuple[bool | None, str, str | None]:
    """(mergeable, mergeable_state, merged tree sha) for a pull request right now."""
    pr = item.pull
    assert pr is not None
    if pr.merged:
        return None, "unknown", None
    base_tip = repo.branch_sha(pr.base_ref)
    if base_tip is None or repo.store.commit(pr.head_sha) is None:
        return False, "dirty", None
    # `base.sha` is not moved here: GitHub leaves it where the base branch was when the
    # head last changed (or the PR was opened), however far the branch has moved since
    # (github/docs issue 431, from GitHub Support's answers); the merge is computed against
    # the branch as it is now
    store = repo.store
    merge_base = store.merge_base(base_tip, pr.head_sha)
    base_commit = store.commit(merge_base) if merge_base else None
    ours = store.commit(base_tip)
    theirs = store.commit(pr.head_sha)
    assert ours is not None and theirs is not None
    try:
        tree = store.three_way(base_commit.tree if base_commit else None, ours.tree,
                               theirs.tree)
    except MergeConflict:
        return False, "dirty", None
    if pr.draft:
        return True, "draft", tree
    if missing_required(repo, pr.head_sha):
        return True, "blocked", tree
    if failing_checks(repo, pr.head_sha):
        return True, "unstable", tree
    return True, "clean", tree


def pull_stats(repo: Repo, item: Issue) -> tuple[int, int, int, int]:
    pr = item.pull
    assert pr is not None
    changes, commits = pull_changes(repo, item)
    return (len(commits), sum(c.additions for c in changes),
            sum(c.deletions for c in changes), len(changes))


def pull_changes(repo: Repo, item: Issue) -> tuple[list[Any], list[str]]:
    pr = item.pull
    assert pr is not None
    store = repo.store
    base = pr.base_sha if pr.merged else (repo.branch_sha(pr.base_ref) or pr.base_sha)
    merge_base = store.merge_base(base, pr.head_sha) if store.commit(pr.head_sha) else None
    head = store.commit(pr.head_sha)
    if head is None:
        return [], []
    mb = store.commit(merge_base) if merge_base else None
    if pr.merged and pr.merge_commit_sha:
        # after a merge GitHub keeps showing the diff against the base at merge time
        merged = store.commit(pr.merge_commit_sha)
        first_parent = merged.parents[0] if merged and merged.parents else None
        if first_parent:
            merge_base = store.merge_base(first_parent, pr.head_sha)
            mb = store.commit(merge_base) if merge_base else None
    changes = store.diff(mb.tree if mb else None, head.tree)
    commits = store.commits_between(merge_base, pr.head_sha) if merge_base else \
        list(reversed(store.ancestors(pr.head_sha)))
    return changes, commits
