"""Release trains (several services promoted as one pull request): the pure decisions.

A train is identified by the digests it sets: the sha256 of the sorted digests names its
branch, so the same combination asked for twice finds the pull request already open, and a
different combination is a different train. A rollback train goes back to the combination
that was live before the group's most recent change in the environment.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ALL_GROUP", "PreviousCombination", "previous_combination", "train_digest"]

# The train of `/promote <env> --all`; the policy refuses a group of that name.
ALL_GROUP = "all"


def train_digest(digests: Iterable[str]) -> str:
    """``sha256:`` + the sha256 of the sorted digests, one per line."""
    joined = "\n".join(sorted(digests))
    return "sha256:" + hashlib.sha256(joined.encode()).hexdigest()


@dataclass(frozen=True)
class Period:
    """What one service's file pinned from one commit on (newest first in a history)."""

    digest: str | None
    tag: str | None
    start_sha: str
    start_at: float  # the start commit's time, as a POSIX timestamp


@dataclass(frozen=True)
class PreviousCombination:
    """Where a group goes back to: per service that moves, the period it returns to."""

    change_sha: str | None  # the commit of the group's most recent change
    moves: Mapping[str, Period]
    unchanged: tuple[str, ...]  # services the most recent change did not touch
    refusal: str | None = None


def previous_combination(histories: Mapping[str, Sequence[Period]], environment: str,
                         branch_commits: Sequence[str] = ()) -> PreviousCombination:
    """The combination before the group's most recent change in ``environment``.

    ``histories`` holds each service's live periods, newest first. The most recent change is
    the newest commit that started a current period; every service whose current period began
    at that commit goes back to its period before it, the others stay. A train merged as one
    commit therefore goes back as a whole; a single-service promotion after it goes back alone.
    ``branch_commits`` (the default branch's recent commits, newest first) orders commits
    made within the same second; a commit not among them is older than those that are, and
    is ordered by its time.
    """
    position = {sha: index for index, sha in enumerate(branch_commits)}

    def recency(period: Period) -> tuple[int, float, str]:
        index = position.get(period.start_sha)
        if index is not None:
            return 1, -index, period.start_sha
        return 0, period.start_at, period.start_sha

    started = [periods[0] for periods in histories.values() if len(periods) > 1]
    if not started:
        return PreviousCombination(None, {}, tuple(histories),
                                   f"no service of the group changed in {environment} within "
                                   "the history Conveyor reads")
    change_sha = max(started, key=recency).start_sha
    moves: dict[str, Period] = {}
    unchanged: list[str] = []
    for service, periods in histories.items():
        if len(periods) < 2 or periods[0].start_sha != change_sha:
            unchanged.append(service)
            continue
        before = periods[1]
        if before.digest is None:
            return PreviousCombination(
                change_sha, {}, tuple(unchanged),
                f"{service} was not pinned by digest in {environment} before commit "
                f"{change_sha[:7]}, so Conveyor cannot prove what ran")
        moves[service] = before
    return PreviousCombination(change_sha, moves, tuple(unchanged))
