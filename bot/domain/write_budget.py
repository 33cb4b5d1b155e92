"""GitHub's content-creation budget as Conveyor paces writes within it (pure): about 80
content-generating requests a minute and 500 an hour per installation ("Rate limits for the
REST API", secondary rate limits), or what a GitHub Enterprise Server's administrator set
(`CONVEYOR_CONTENT_LIMITS`)."""

from __future__ import annotations

from dataclasses import dataclass

MINUTE = 60.0
HOUR = 3600.0


@dataclass(frozen=True)
class WriteBudget:
    """Content-creating requests allowed per minute and per hour; None: that window has no
    limit."""

    per_minute: int | None = 80
    per_hour: int | None = 500
    # Added to each window: the clocks of GitHub and of the replicas differ a little, and a
    # request is counted when it arrives, not when it leaves.
    margin: float = 1.0

    def windows(self) -> list[tuple[float, int]]:
        """(seconds, allowed) of each limited window."""
        return [(span, allowed) for span, allowed in ((MINUTE, self.per_minute),
                                                      (HOUR, self.per_hour))
                if allowed is not None]


GITHUB_COM_BUDGET = WriteBudget()
_UNITS = {"min": MINUTE, "h": HOUR}


def parse_content_limits(text: str) -> WriteBudget | None:
    """`80/min,500/h` (GitHub's own, the default), either window alone, or `off` (a server
    without content limits: None). Raises ValueError saying what is wrong."""
    value = text.strip().lower()
    if value == "off":
        return None
    limits: dict[float, int] = {}
    for part in value.split(","):
        count, slash, unit = (piece.strip() for piece in part.partition("/"))
        span = _UNITS.get(unit)
        if not slash or span is None or not (count.isascii() and count.isdigit()) \
                or int(count) < 1:
            raise ValueError(f"must be `off` or limits like `80/min,500/h`, got {text!r}")
        if span in limits:
            raise ValueError(f"names /{unit} twice: {text!r}")
        limits[span] = int(count)
    return WriteBudget(per_minute=limits.get(MINUTE), per_hour=limits.get(HOUR))
