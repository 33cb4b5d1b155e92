"""What finishes the work a failed job left half done on open promotion PRs, as pure functions.

The resync gathers the open single-service promotion PRs Conveyor opened (with the trusted
facts of Conveyor's own commit) into :class:`PromotionPull` values; :func:`leftover_steps`
says which to close as superseded and which to merge.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from bot.domain.tags import is_newer

__all__ = [
    "LeftoverStep",
    "Merge",
    "PromotionPull",
    "Supersede",
    "leftover_steps",
]


@dataclass(frozen=True)
class PromotionPull:
    """An open promotion PR of one service into one environment."""

    number: int
    service: str
    environment: str
    version: str
    at_head: bool  # Conveyor's commit is the PR's head: nobody pushed after it


@dataclass(frozen=True)
class Supersede:
    """Close ``pull``: ``by`` promotes a newer version of the same service there."""

    pull: int
    by: int


@dataclass(frozen=True)
class Merge:
    """Merge ``pull``: its auto-merge did not happen."""

    pull: int


LeftoverStep = Supersede | Merge


def leftover_steps(pulls: Sequence[PromotionPull], *, merging: Collection[str],
                   services: Collection[str]) -> list[LeftoverStep]:
    """The steps, in the order of ``pulls``, that finish what failed jobs left undone.

    Of two open PRs for one (service, environment), the older version is superseded by the
    newer (the first of equal versions stays). The one left open is merged when its
    environment is among ``merging`` (ungated ``auto_merge``), its service among ``services``
    and Conveyor's commit is still its head (the resync still leaves it open when its file
    already pins a newer version).
    """
    newest: dict[tuple[str, str], PromotionPull] = {}
    for pull in pulls:
        key = (pull.service, pull.environment)
        best = newest.get(key)
        if best is None or is_newer(pull.version, best.version):
            newest[key] = pull
    steps: list[LeftoverStep] = []
    for pull in pulls:
        winner = newest[(pull.service, pull.environment)]
        if winner.number != pull.number:
            steps.append(Supersede(pull.number, by=winner.number))
        elif pull.environment in merging and pull.service in services and pull.at_head:
            steps.append(Merge(pull.number))
    return steps
