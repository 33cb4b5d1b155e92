"""Pure parts of the status tables and the dashboard issue."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.domain.promotions.marker import PromotionMarker
from bot.promotion.dashboard.issue import DASHBOARD_MARKER, is_dashboard, render_pages
from bot.promotion.dashboard.status import (
    OpenPull,
    StatusRow,
    open_promotions_for,
    render_status,
)

DIGEST = "sha256:" + "e" * 64


BOT = "conveyor[bot]"


def pull(number: int, ref: str, version: str | None = None, author: str = BOT
         ) -> dict[str, Any]:
    body = "hand-written"
    if version:
        body = PromotionMarker(service="web", environment="production", digest=DIGEST,
                               tag=version, version=version, paths=(), source_repo="acme/web"
                               ).render()
    return {"number": number, "html_url": f"https://x/pull/{number}", "head": {"ref": ref},
            "body": body, "user": {"login": author}}


def test_open_promotions_are_found_by_branch() -> None:
    pulls = [
        pull(7, "conveyor/production/web-eeeeeeeeeeee", "1.4.2"),
        pull(3, "conveyor/rollback/production/web-aaaaaaaaaaaa"),
        pull(4, "conveyor/production/webshop-eeeeeeeeeeee", "9.9.9"),
        pull(5, "conveyor/staging/web-eeeeeeeeeeee", "1.4.2"),
        pull(6, "feature/production/web-x"),
        # a writer's PR from a branch named like a promotion, its body copied: not Conveyor's
        pull(8, "conveyor/production/web-bbbbbbbbbbbb", "6.6.6", author="mallory"),
    ]
    assert open_promotions_for(pulls, "production", "web", BOT) == (
        OpenPull(3, "https://x/pull/3", None, rollback=True),
        OpenPull(7, "https://x/pull/7", "1.4.2"),
    )


ROWS = [
    StatusRow("web", "staging", "apps/web/staging.yaml", "1.4.2", DIGEST,
              package_url="https://x/pkg/1", since=datetime(2026, 11, 30, 10, 5, tzinfo=UTC),
              since_commit="f" * 40, since_url="https://x/commit/f", pull_number=42,
              pull_url="https://x/pull/42"),
    StatusRow("web", "production", "apps/web/prod.yaml", "1.4.1", DIGEST,
              since=datetime(2026, 11, 29, 8, 0, tzinfo=UTC),
              open_pulls=(OpenPull(45, "https://x/pull/45", "1.4.2"),
                          OpenPull(46, "https://x/pull/46", None, rollback=True))),
    StatusRow("api", "staging", "charts/api.yaml", problem="`charts/api.yaml` does not exist"),
]


def test_render_one_table_per_service() -> None:
    text = render_status(ROWS)
    assert text == "\n".join([
        "### web",
        "",
        "| environment | version | digest | since | merged in | open promotions |",
        "| --- | --- | --- | --- | --- | --- |",
        "| staging | `1.4.2` | [`sha256:eeeeeeeeeeee`](https://x/pkg/1) "
        "| [2026-11-30 10:05 UTC](https://x/commit/f) | #42 | — |",
        "| production | `1.4.1` | `sha256:eeeeeeeeeeee` | 2026-11-29 08:00 UTC | — "
        "| #45 `1.4.2`, #46 (rollback) |",
        "",
        "### api",
        "",
        "| environment | version | digest | since | merged in | open promotions |",
        "| --- | --- | --- | --- | --- | --- |",
        "| staging | — | — | — | — | — |",
        "",
        "> staging: `charts/api.yaml` does not exist",
    ])


def test_render_one_service_or_say_there_is_none() -> None:
    assert render_status(ROWS, "API").startswith("### api\n")
    assert "### web" not in render_status(ROWS, "api")
    assert render_status(ROWS, "db") == "No service named `db` in this repository's policy."
    assert render_status([]) == "No services are configured in this repository's policy."


def test_dashboard_body_and_recognition() -> None:
    [body] = render_pages("acme/deploy", ROWS)
    assert body.endswith(DASHBOARD_MARKER)
    assert "### web" in body and "**acme/deploy**" in body
    ours = {"number": 1, "body": body, "user": {"login": "conveyor[bot]"}}
    assert is_dashboard(ours, "conveyor[bot]")
    assert is_dashboard(ours, "")  # the app's login not learned yet
    assert not is_dashboard({**ours, "user": {"login": "mallory"}}, "conveyor[bot]")
    assert not is_dashboard({**ours, "body": "labelled by hand"}, "conveyor[bot]")
    assert not is_dashboard({**ours, "pull_request": {}}, "conveyor[bot]")
