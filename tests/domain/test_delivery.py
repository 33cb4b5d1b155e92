"""Delivery metrics of a scripted month, against figures computed by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.delivery import DeliveredPromotion, Outage, figures, weekly_lead_times

SINCE, UNTIL = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0, month: int = 11) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


PROMOTIONS = [
    # source 08:00, merged 10:00 (2h), reported deployed 10:30 (2h30m)
    DeliveredPromotion("web", "staging", at(2, 10), at(2, 8), at(2, 10, 30)),
    # a day from commit to merge, deployed 20 minutes later, then reported failing: rolled back
    DeliveredPromotion("web", "staging", at(10, 9), at(9, 9), at(10, 9, 20), failed=True),
    DeliveredPromotion("web", "staging", at(10, 9, 40), at(2, 8), at(10, 9, 45), rollback=True),
    # an hour to merge, never reported deployed
    DeliveredPromotion("web", "staging", at(16, 13), at(16, 12), None),
    # a hand-written change: no source commit known
    DeliveredPromotion("web", "staging", at(23, 15), None, at(23, 15, 5)),
    # before the window
    DeliveredPromotion("web", "staging", at(30, 12, month=10), at(30, 11, month=10), None),
    # another environment and another service
    DeliveredPromotion("web", "production", at(3, 8), at(2, 8), at(3, 8, 10)),
    DeliveredPromotion("api", "staging", at(5, 8), at(5, 7), None, failed=True),
]
OUTAGES = [
    Outage("web", "staging", at(10, 9, 20), at(10, 9, 50)),  # 30m
    Outage("web", "staging", at(20, 10), at(20, 11, 30)),  # 90m
    Outage("web", "staging", at(28, 10), None),  # not restored: left out
    Outage("web", "staging", at(29, 10, month=10), at(29, 12, month=10)),  # before the window
    Outage("api", "staging", at(5, 9), at(5, 9, 5)),
]


@pytest.mark.parametrize(("service", "environment", "expected"), [
    # 5 deployments in 30 days; 4 changes (the rollback is none), 1 failed;
    # lead times: median(2h, 24h, 1h) = 2h and median(2h30m, 24h20m) = 13h25m;
    # restore: median(30m, 90m) = 1h
    ("web", "staging", (5, 5 / 30, 4, 1, 0.25, timedelta(hours=2),
                        timedelta(hours=13, minutes=25), timedelta(hours=1))),
    ("web", "production", (1, 1 / 30, 1, 0, 0.0, timedelta(hours=24),
                           timedelta(hours=24, minutes=10), None)),
    ("api", "staging", (1, 1 / 30, 1, 1, 1.0, timedelta(hours=1), None,
                        timedelta(minutes=5))),
    ("api", "production", (0, 0.0, 0, 0, None, None, None, None)),
])
def test_a_scripted_month(service: str, environment: str, expected: tuple[object, ...]) -> None:
    got = figures(service, environment, PROMOTIONS, OUTAGES, SINCE, UNTIL)
    assert (got.deployments, got.per_day, got.changes, got.failures, got.change_failure_rate,
            got.lead_time_merged, got.lead_time_deployed, got.time_to_restore) == expected


def test_lead_time_per_week() -> None:
    weeks = weekly_lead_times("staging", PROMOTIONS, SINCE, UNTIL)
    # weeks from Nov 1: [1, 8), [8, 15), [15, 22), [22, 29), [29, Dec 1)
    assert [start.day for start, _ in weeks] == [1, 8, 15, 22, 29]
    assert [lead for _, lead in weeks] == [
        timedelta(hours=1, minutes=30),  # web 1.0.0 (2h) and api (1h)
        timedelta(hours=24),  # web 1.1.0; its rollback is no change
        timedelta(hours=1),
        None,  # the hand-written change has no source commit
        None,
    ]
