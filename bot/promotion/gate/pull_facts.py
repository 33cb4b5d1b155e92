"""What the gate knows of a pull request before it reads the files: head, base, author, labels,
the marker, and the commit Conveyor made on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.domain.promotions.marker import PromotionMarker, parse_marker
from bot.promotion.authorship.trust import ConveyorCommit


@dataclass
class PullFacts:
    """One pull request as the gate reads it."""

    number: int
    head_sha: str
    base_sha: str
    author: str
    labels: tuple[str, ...]
    marker: PromotionMarker | None
    html_url: str
    state: str
    changed_files: int | None = None
    # the commit Conveyor made on its own PR, the only source of trust (None for anyone else's)
    trusted: ConveyorCommit | None = None

    @classmethod
    def from_api(cls, pr: dict[str, Any]) -> PullFacts:
        return cls(
            number=int(pr["number"]), head_sha=pr["head"]["sha"], base_sha=pr["base"]["sha"],
            author=(pr.get("user") or {}).get("login", ""),
            labels=tuple(label["name"] for label in pr.get("labels") or []),
            marker=parse_marker(pr.get("body")), html_url=pr.get("html_url", ""),
            state=pr.get("state", "open"),
            changed_files=pr.get("changed_files") if isinstance(pr.get("changed_files"), int)
            else None,
        )
