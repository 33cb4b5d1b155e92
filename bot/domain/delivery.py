"""Delivery metrics of one service in one environment, from plain facts read off GitHub.

- **deployment frequency**: merged promotions (rollbacks included) per day of the window;
- **lead time for changes**: from the source commit's time to the merge into the environment,
  and to the first successful deployment report after it (median of the promotions that have
  one; rollbacks are not changes and are left out);
- **change failure rate**: the share of promotions (rollbacks left out) followed, within the
  environment's `watch` of their merge, by a rollback or a trusted failure report;
- **time to restore**: from a failure report to the next successful report of the same service
  and environment (median; a failure not yet restored is left out).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import median

__all__ = ["DeliveredPromotion", "Figures", "Outage", "figures", "weekly_lead_times"]


@dataclass(frozen=True)
class DeliveredPromotion:
    """A merged promotion as the delivery figures count it: when it merged, when its source
    was committed and first deployed, and whether it failed."""

    service: str
    environment: str
    merged_at: datetime
    source_at: datetime | None  # the source commit's time, when known
    deployed_at: datetime | None  # the first successful report after the merge
    rollback: bool = False  # the promotion is itself a rollback
    failed: bool = False  # a rollback or a failure report followed within watch


@dataclass(frozen=True)
class Outage:
    """A failure report and the next successful report (None while not restored)."""

    service: str
    environment: str
    failed_at: datetime
    restored_at: datetime | None


@dataclass(frozen=True)
class Figures:
    service: str
    environment: str
    deployments: int
    per_day: float
    changes: int  # promotions that are not rollbacks
    failures: int
    lead_time_merged: timedelta | None
    lead_time_deployed: timedelta | None
    time_to_restore: timedelta | None
    # every lead time behind the medians (the histogram of /metrics)
    samples_merged: tuple[timedelta, ...] = field(default=(), compare=False)
    samples_deployed: tuple[timedelta, ...] = field(default=(), compare=False)

    @property
    def change_failure_rate(self) -> float | None:
        return self.failures / self.changes if self.changes else None


def _median(spans: Sequence[timedelta]) -> timedelta | None:
    if not spans:
        return None
    return timedelta(seconds=median(s.total_seconds() for s in spans))


def figures(service: str, environment: str, promotions: Iterable[DeliveredPromotion],
            outages: Iterable[Outage], since: datetime, until: datetime) -> Figures:
    """The figures of promotions merged and outages begun in ``[since, until)``."""
    mine = [p for p in promotions if (p.service, p.environment) == (service, environment)
            and since <= p.merged_at < until]
    changes = [p for p in mine if not p.rollback]
    days = max((until - since).total_seconds() / 86400, 1e-9)
    restored = [o.restored_at - o.failed_at for o in outages
                if (o.service, o.environment) == (service, environment)
                and since <= o.failed_at < until and o.restored_at is not None]
    merged = [p.merged_at - p.source_at for p in changes if p.source_at is not None]
    deployed = [p.deployed_at - p.source_at for p in changes
                if p.source_at is not None and p.deployed_at is not None]
    return Figures(
        service=service, environment=environment, deployments=len(mine),
        per_day=len(mine) / days, changes=len(changes),
        failures=sum(1 for p in changes if p.failed),
        lead_time_merged=_median(merged), lead_time_deployed=_median(deployed),
        time_to_restore=_median(restored),
        samples_merged=tuple(merged), samples_deployed=tuple(deployed),
    )


def weekly_lead_times(environment: str, promotions: Iterable[DeliveredPromotion], since: datetime,
                      until: datetime) -> list[tuple[datetime, timedelta | None]]:
    """Per week from ``since``: the median lead time to merge into ``environment`` of the
    promotions (every service, rollbacks left out) merged that week."""
    weeks: list[tuple[datetime, timedelta | None]] = []
    start = since
    while start < until:
        end = min(start + timedelta(days=7), until)
        weeks.append((start, _median([
            p.merged_at - p.source_at for p in promotions
            if p.environment == environment and not p.rollback and p.source_at is not None
            and start <= p.merged_at < end])))
        start = end
    return weeks
