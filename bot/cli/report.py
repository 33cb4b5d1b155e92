"""`python -m bot report`: the delivery metrics of one deployment repository, from GitHub.

It authenticates as the app (the settings `serve` reads), finds the repository's installation,
reads the policy from the default branch and prints the four figures per service and
environment as Markdown, JSON or CSV.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import gidgethub

from bot.domain.delivery import Figures
from bot.domain.durations import format_duration, parse_duration
from bot.domain.policy import PolicyError, load_policy
from bot.github.client import ConveyorGitHubAPI, GitHubClients
from bot.github.refusals import or_none
from bot.github.repos import get_file
from bot.github.transient import TransientError
from bot.names import POLICY_PATH
from bot.promotion.watching.delivery import DeliveryReader
from bot.runtime.settings import Settings, SettingsError, checked_api_url, load_settings
from bot.text import format_time

MAX_SINCE = timedelta(days=366)
_REPO_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
COLUMNS = ("service", "environment", "deployments", "deployments_per_day",
           "lead_time_merged_seconds", "lead_time_deployed_seconds", "change_failure_rate",
           "time_to_restore_seconds")


class ReportError(Exception):
    """Bad input or an answer that stops the report; the message is one line."""


class NotGitHub(Exception):
    """The API URL answers, but not as GitHub's REST API does; the message is one line."""


def parse_since(text: str) -> timedelta:
    try:
        since = parse_duration(text, maximum=MAX_SINCE)
    except ValueError as exc:
        raise ReportError(f"--since: {exc}") from None
    if since <= timedelta(0):
        raise ReportError("--since: must be longer than 0, such as 30d")
    return since


def check_repo(text: str) -> str:
    if not _REPO_RE.fullmatch(text) or text.endswith((".", "/")):
        raise ReportError(f"--repo: expected OWNER/REPO, got {text!r}")
    return text


def check_api_url(text: str) -> str:
    try:
        return checked_api_url(text, "--api-url")
    except SettingsError as exc:
        raise ReportError(str(exc)) from None


def _seconds(span: timedelta | None) -> float | None:
    return span.total_seconds() if span is not None else None


def rows(found: Sequence[Figures]) -> list[dict[str, object]]:
    return [{
        "service": f.service, "environment": f.environment, "deployments": f.deployments,
        "deployments_per_day": round(f.per_day, 4),
        "lead_time_merged_seconds": _seconds(f.lead_time_merged),
        "lead_time_deployed_seconds": _seconds(f.lead_time_deployed),
        "change_failure_rate": (round(f.change_failure_rate, 4)
                                if f.change_failure_rate is not None else None),
        "time_to_restore_seconds": _seconds(f.time_to_restore),
    } for f in found]


def _span(span: timedelta | None) -> str:
    return format_duration(span) if span is not None else "—"


def render(found: Sequence[Figures], fmt: str, full_name: str, since: datetime, until: datetime
           ) -> str:
    if fmt == "json":
        return json.dumps({"repository": full_name, "since": format_time(since),
                           "until": format_time(until), "figures": rows(found)}, indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()}
                         for row in rows(found))
        return out.getvalue().rstrip("\n")
    lines = [f"Delivery of {full_name} from {format_time(since)} to {format_time(until)}", "",
             "| service | environment | deployments | per week | lead time to merge | "
             "lead time to deployed | change failure rate | time to restore |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in found:
        rate = f"{f.change_failure_rate:.0%}" if f.change_failure_rate is not None else "—"
        lines.append(f"| {f.service} | {f.environment} | {f.deployments} | "
                     f"{f.per_day * 7:.1f} | {_span(f.lead_time_merged)} | "
                     f"{_span(f.lead_time_deployed)} | {rate} | {_span(f.time_to_restore)} |")
    return "\n".join(lines)


async def collect(settings: Settings, full_name: str, since: timedelta,
                  now: Callable[[], datetime] = lambda: datetime.now(UTC),
                  ) -> tuple[list[Figures], datetime, datetime]:
    clients = GitHubClients(api_url=settings.api_url, app_id=settings.app_id,
                            private_key=settings.private_key)
    try:
        app = clients.app()
        me = await _the_app(app, settings.api_url)
        installation = await or_none(app.getitem(f"/repos/{full_name}/installation"), 404)
        if installation is None:
            raise ReportError(f"{full_name}: the app is not installed on it (or it does not exist)")
        gh = await clients.installation(int(installation["id"]))
        details = await gh.getitem(f"/repos/{full_name}")
        branch = str(details["default_branch"])
        text = await get_file(gh, full_name, POLICY_PATH, branch)
        if text is None:
            raise ReportError(f"{full_name}: no {POLICY_PATH} on {branch}")
        try:
            policy = load_policy(text.text)
        except PolicyError as exc:
            first = exc.issues[0] if exc.issues else None
            where = f" (line {first.line}: {first.message})" if first else ""
            raise ReportError(f"{full_name}: {POLICY_PATH} is invalid{where}") from None
        until = now()
        start = until - since
        reader = DeliveryReader(gh, full_name, branch, policy, bot_login=f"{me['slug']}[bot]",
                                app_id=int(settings.app_id))
        return await reader.figures(start, until), start, until
    finally:
        await clients.close()


async def _the_app(app: ConveyorGitHubAPI, api_url: str) -> dict[str, Any]:
    """`GET /app`, the report's first request. GitHub answers it in JSON whatever the app's
    key, a refusal too: an answer that is not the app's JSON (a web page, a proxy's 404) comes
    from a server that is not GitHub's REST API."""
    try:
        me = await app.getitem("/app")
    except gidgethub.BadRequest as exc:
        if exc.headers.get("content-type", "").startswith("application/json"):
            raise
        answered = f"{int(exc.status_code)} {exc.status_code.phrase} without JSON"
    except ValueError:  # a body said to be JSON that is not
        answered = "something other than the app's JSON"
    else:
        if isinstance(me, dict) and isinstance(me.get("slug"), str):
            return me
        answered = "something other than the app's JSON"
    raise NotGitHub(f"{api_url} does not answer as GitHub's REST API: GET /app answered "
                    f"{answered} (GitHub Enterprise Server's is https://HOST/api/v3)")


def run(full_name: str, since: str, fmt: str, api_url: str | None) -> int:
    # The client logs each retry as a warning; the report ends with one line of its own.
    bot_log = logging.getLogger("bot")
    level = bot_log.level
    bot_log.setLevel(logging.ERROR)
    try:
        checked = check_repo(full_name)
        window = parse_since(since)
        other_api = check_api_url(api_url) if api_url is not None else None
        settings = load_settings()
        if other_api is not None:
            settings = replace(settings, api_url=other_api)
        found, start, until = asyncio.run(collect(settings, checked, window))
    except ReportError as exc:
        print(f"conveyor report: {exc}", file=sys.stderr)
        return 2
    except NotGitHub as exc:
        print(f"conveyor report: {exc}", file=sys.stderr)
        return 1
    except TransientError as exc:
        print(f"conveyor report: cannot reach GitHub: {exc}", file=sys.stderr)
        return 1
    except gidgethub.GitHubException as exc:
        print(f"conveyor report: GitHub answered {exc}", file=sys.stderr)
        return 1
    finally:
        bot_log.setLevel(level)
    print(render(found, fmt, checked, start, until))
    return 0
