"""The delivery figures of every deployment repository, as last read from GitHub: exposed on
`/metrics` and as a section of the dashboard issue.

The figures are read by the background loop at most once per :data:`REFRESH_EVERY` (they move
slowly and each read lists merged pull requests and their reports), and for one repository
again shortly after a promotion of it merges (debounced), over the trailing :data:`WINDOW`.
Labels come from the policy only: repository, service and environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import gidgethub.abc
from prometheus_client.core import (
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from bot.domain.delivery import Figures, figures, weekly_lead_times
from bot.domain.durations import format_duration
from bot.promotion.policies import DeploymentRepo
from bot.promotion.watching.delivery import DeliveryReader

if TYPE_CHECKING:
    from bot.runtime.context import Context

WINDOW = timedelta(days=30)
REFRESH_EVERY = timedelta(hours=1)
LEAD_TIME_BUCKETS = (300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800,
                     1209600, 2592000)
LABELS = ["repository", "service", "environment"]


@dataclass(frozen=True)
class Snapshot:
    full_name: str
    since: datetime
    until: datetime
    figures: tuple[Figures, ...]
    weekly: tuple[tuple[str, tuple[tuple[datetime, timedelta | None], ...]], ...]


async def read_snapshot(ctx: Context, gh: gidgethub.abc.GitHubAPI, repo: DeploymentRepo,
                        until: datetime, window: timedelta = WINDOW) -> Snapshot:
    policy = repo.policy
    since = until - window
    reader = DeliveryReader(gh, repo.full_name, repo.default_branch, policy,
                            bot_login=ctx.bot_login, app_id=ctx.app_id)
    promotions, outages = await reader.read(since, until)
    return Snapshot(
        full_name=repo.full_name, since=since, until=until,
        figures=tuple(figures(service, env, promotions, outages, since, until)
                      for service in policy.services for env in policy.environments),
        weekly=tuple((env, tuple(weekly_lead_times(env, promotions, since, until)))
                     for env in policy.environments),
    )


class DeliveryBoard:
    """The latest snapshot per repository; a Prometheus collector of them."""

    def __init__(self) -> None:
        self._snapshots: dict[str, Snapshot] = {}
        self._read_at: datetime | None = None

    def store(self, snapshot: Snapshot) -> None:
        self._snapshots[snapshot.full_name.lower()] = snapshot

    def get(self, full_name: str) -> Snapshot | None:
        return self._snapshots.get(full_name.lower())

    def due(self, now: datetime) -> bool:
        return self._read_at is None or now - self._read_at >= REFRESH_EVERY

    def read_at(self, now: datetime) -> None:
        self._read_at = now

    def describe(self) -> list[Metric]:
        return []  # the families depend on what was read; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        # A count over a trailing window falls as old merges leave it: a gauge, not a counter.
        merged = GaugeMetricFamily(
            "conveyor_promotions_merged",
            "Promotion PRs merged in the trailing 30 days (rollbacks included)", labels=LABELS)
        failed = GaugeMetricFamily(
            "conveyor_change_failure_rate",
            "Share of promotions (not rollbacks) of the trailing 30 days followed within watch "
            "by a failure report or a rollback", labels=LABELS)
        restore = GaugeMetricFamily(
            "conveyor_time_to_restore_seconds",
            "Median time from a failure report to the next successful report, trailing 30 "
            "days", labels=LABELS)
        lead = HistogramMetricFamily(
            "conveyor_lead_time_seconds",
            "Source commit to merge (until=merged) or to reported deployed (until=deployed), "
            "promotions of the trailing 30 days", labels=[*LABELS, "until"])
        for snapshot in self._snapshots.values():
            for item in snapshot.figures:
                labels = [snapshot.full_name, item.service, item.environment]
                merged.add_metric(labels, item.deployments)
                if item.change_failure_rate is not None:
                    failed.add_metric(labels, item.change_failure_rate)
                if item.time_to_restore is not None:
                    restore.add_metric(labels, item.time_to_restore.total_seconds())
                for until, samples in (("merged", item.samples_merged),
                                       ("deployed", item.samples_deployed)):
                    seconds = [s.total_seconds() for s in samples]
                    buckets = [(str(float(b)), float(sum(1 for s in seconds if s <= b)))
                               for b in LEAD_TIME_BUCKETS]
                    buckets.append(("+Inf", float(len(seconds))))
                    lead.add_metric([*labels, until], buckets, sum_value=sum(seconds))
        yield from (merged, failed, restore, lead)


def render_section(snapshot: Snapshot) -> str:
    """The dashboard's delivery section: the four figures per service and environment, and a
    Mermaid chart of the median lead time to merge per week (hours) per environment."""
    lines = [f"### Delivery, last {WINDOW.days} days", "",
             "| service | environment | deployments | lead time to merge | lead time to "
             "deployed | change failure rate | time to restore |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for item in snapshot.figures:
        if item.deployments == 0:
            continue
        rate = f"{item.change_failure_rate:.0%}" if item.change_failure_rate is not None \
            else "—"
        lines.append(f"| {item.service} | {item.environment} | {item.deployments} | "
                     f"{_span(item.lead_time_merged)} | {_span(item.lead_time_deployed)} | "
                     f"{rate} | {_span(item.time_to_restore)} |")
    if len(lines) == 4:
        lines.append("| — | — | 0 | — | — | — | — |")
    for env, weeks in snapshot.weekly:
        if all(lead is None for _, lead in weeks):
            continue
        labels = ", ".join(f'"{start:%b %d}"' for start, _ in weeks)
        values = ", ".join(f"{(lead.total_seconds() / 3600) if lead else 0:.1f}"
                           for _, lead in weeks)
        lines += ["", "```mermaid", "xychart-beta",
                  f'    title "Lead time to merge into {env}, median per week (hours)"',
                  f"    x-axis [{labels}]", '    y-axis "hours"', f"    bar [{values}]", "```"]
    lines += ["", f"The same figures as a table, JSON or CSV: `python -m bot report --repo "
              f"{snapshot.full_name}`."]
    return "\n".join(lines)


def _span(span: timedelta | None) -> str:
    return format_duration(span) if span is not None else "—"
