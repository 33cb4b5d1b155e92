"""The dashboard issue: one issue labelled `conveyor-dashboard` per deployment repository whose
body is the status tables, kept current by editing it in place.

The body opens with a compact table (a row per service, a column per environment), followed by
each service's full table in a `<details>` block. GitHub takes at most 65,536 characters in a
body or a comment, so a large policy continues in comments of the same issue, each marked
with its part number: edited in place, created when a part is new, and emptied (kept for
later) when fewer parts are needed.

Found by its label and hidden marker, created when missing, edited only when its text changes.
Updates are debounced: a burst of promotion changes schedules one internal `dashboard` job a
few seconds after the first of them. REST has no endpoint to pin an issue (only GraphQL's
`pinIssue`), so pinning is left to a maintainer, once; Conveyor keeps editing the same issue.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.github.limits import BODY_LIMIT, fit
from bot.github.repos import write_comment
from bot.promotion.dashboard.graph_chart import flowchart, policy_edges
from bot.promotion.dashboard.status import StatusRow, StatusSources, render_status
from bot.promotion.gate.enforcement import GateEnforcement
from bot.promotion.policies import DeploymentRepo, PolicyIndex
from bot.promotion.watching.delivery_board import (
    DeliveryBoard,
    Snapshot,
    read_snapshot,
    render_section,
)
from bot.runtime.timer_jobs import DashboardDue, DeliveryDue
from bot.text import escape_markdown

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

DASHBOARD_LABEL = "conveyor-dashboard"
DASHBOARD_MARKER = "<!-- conveyor:dashboard -->"
DASHBOARD_TITLE = "Conveyor dashboard"
DEBOUNCE = timedelta(seconds=5)
PART_MARKER_PREFIX = "<!-- conveyor:dashboard-part "
PAGE_LIMIT = BODY_LIMIT
PART_MARKER_ROOM = 200  # the part line, the "continued" note and the marker
NONE = "—"
UNUSED_PART = "_This part of the dashboard is not needed at the moment._"
INTRO = ("What runs where in **{repo}**, per service and environment, as the default branch "
         "says. Conveyor edits this issue after every promotion change; edits by hand are "
         "overwritten.")
FOOTER = "Ask for the same table in any issue or pull request with `/status [service]`."
DELIVERY_MARKER = "<!-- conveyor:delivery-until {until} -->"
# The delivery section, from its marker to the end of its page.
_DELIVERY = re.compile(r"<!-- conveyor:delivery-until (\S+) -->\n.*?(?=\n\n_Continued in "
                       r"|\n\n<!-- conveyor:dashboard|\Z)", re.DOTALL)
_PACKAGE_LINK = re.compile(r"\[`(sha256:[0-9a-f]{12})`\]\((\S+?)\)")


def render_pages(full_name: str, rows: Sequence[StatusRow], delivery: str | None = None, *,
                 limit: int = PAGE_LIMIT,
                 edges: Mapping[str, Sequence[str]] | None = None,
                 warnings: Sequence[str] = (), advice: Sequence[str] = ()) -> list[str]:
    """The issue body, then the comments that continue it, each within `limit` characters
    (markers included). ``delivery``: the delivery section, once its figures have been read;
    ``edges``: the environment graph, drawn above the tables; ``warnings``: where GitHub does
    not enforce the gate, said first; ``advice``: where it does, the protections beside it
    that are missing or cannot be seen, said next."""
    services = list(dict.fromkeys(row.service for row in rows))
    environments = list(dict.fromkeys(row.environment for row in rows))
    by_service: dict[str, list[StatusRow]] = {}
    for row in rows:
        by_service.setdefault(row.service, []).append(row)
    cells = {(row.service, row.environment): _compact(row) for row in rows}
    header = "\n".join([f"| service | {' | '.join(environments)} |",
                        "| --- |" + " --- |" * len(environments)])
    items: list[tuple[str, bool]] = [(f"> ⚠️ {escape_markdown(warning)}", False)
                                     for warning in warnings]
    items += [(f"> ℹ️ {escape_markdown(line)}", False) for line in advice]
    items.append((INTRO.format(repo=full_name), False))
    if edges and rows:
        items.append((flowchart(edges, rows), False))
    if not rows:
        items.append(("No services are configured in this repository's policy.", False))
    items += [(f"| {name} | " + " | ".join(cells.get((name, env), NONE) for env in environments)
               + " |", True) for name in services]
    items += [(f"<details><summary>{name}</summary>\n\n{render_status(by_service[name])}"
               "\n\n</details>", False) for name in services]
    items.append((FOOTER, False))
    if delivery:
        items.append((delivery, False))
    pages = _pack(items, header, limit - PART_MARKER_ROOM)
    total = len(pages)
    out = []
    for number, page in enumerate(pages):
        if number == 0:
            more = f"\n\n_Continued in {total - 1} comment{'s' if total > 2 else ''} below._" \
                if total > 1 else ""
            out.append(f"{page}{more}\n\n{DASHBOARD_MARKER}")
        else:
            out.append(f"_Dashboard, part {number + 1} of {total}._\n\n{page}\n\n"
                       f"{part_marker(number)}")
    return out


def _compact(row: StatusRow) -> str:
    if row.problem:
        return "⚠"
    text = f"`{row.version}`" if row.version else NONE
    if row.open_pulls:
        text += f" ({len(row.open_pulls)} open)"
    return text


def _pack(items: list[tuple[str, bool]], header: str, limit: int) -> list[str]:
    """Greedy pages of whole items; a table continued on a new page repeats its header."""
    pages: list[list[str]] = [[]]
    sizes = [0]
    in_table = False
    for text, is_row in items:
        piece = text if not is_row or in_table else f"{header}\n{text}"
        joint = 1 if is_row and in_table else 2
        if sizes[-1] and sizes[-1] + joint + len(piece) > limit:
            pages.append([])
            sizes.append(0)
            in_table = False
            piece = f"{header}\n{text}" if is_row else text
        if len(piece) > limit:  # one service's details alone: shortened, never refused
            piece = fit(piece, limit)
        if pages[-1]:
            pages[-1].append("\n" if is_row and in_table else "\n\n")
            sizes[-1] += joint
        pages[-1].append(piece)
        sizes[-1] += len(piece)
        in_table = is_row
    return ["".join(page) for page in pages]


def part_marker(number: int) -> str:
    return f"{PART_MARKER_PREFIX}{number + 1} -->"


def part_number(body: str) -> int | None:
    """The 0-based part of a continuation comment, from its marker."""
    match = re.search(re.escape(PART_MARKER_PREFIX) + r"(\d+) -->", body)
    return int(match.group(1)) - 1 if match else None


def is_dashboard(issue: dict[str, Any], bot_login: str) -> bool:
    """Our dashboard: an issue (not a PR) carrying the marker; by the app when we know it."""
    if "pull_request" in issue or DASHBOARD_MARKER not in (issue.get("body") or ""):
        return False
    author = str((issue.get("user") or {}).get("login") or "")
    return not bot_login or author.lower() == bot_login.lower()


async def find_dashboard(ctx: Context, gh: GitHubAPI, full_name: str) -> dict[str, Any] | None:
    """The oldest open dashboard issue of the repository."""
    found = [issue async for issue in gh.getiter(
        f"/repos/{full_name}/issues?labels={quote(DASHBOARD_LABEL)}&state=open&per_page=100")
        if is_dashboard(issue, ctx.bot_login)]
    return min(found, key=lambda issue: int(issue["number"])) if found else None


@dataclass(frozen=True)
class DashboardCapabilities:
    """What the dashboard issue and the delivery figures are made from."""

    ctx: Context
    policies: PolicyIndex
    status: StatusSources
    enforcement: GateEnforcement
    delivery: DeliveryBoard


async def refresh_dashboard(dashboards: DashboardCapabilities, gh: GitHubAPI,
                            repo: DeploymentRepo) -> dict[str, Any]:
    """Create or edit the dashboard issue and its continuation comments."""
    ctx = dashboards.ctx
    async with ctx.locks.hold(f"dashboard:{repo.full_name}"):
        issue = await find_dashboard(ctx, gh, repo.full_name)
        shown = str((issue or {}).get("body") or "").replace("\r\n", "\n")
        rows = kept_package_pages(await dashboards.status.collect(gh, repo), shown,
                                  ctx.web_url)
        enforcement = await dashboards.enforcement.of(gh, repo)
        pages = render_pages(repo.full_name, rows,
                             newest_delivery(dashboards.delivery.get(repo.full_name), shown,
                                             ctx.clock()),
                             edges=policy_edges(repo.policy), warnings=enforcement.findings,
                             advice=enforcement.advice)
        body = pages[0]
        if issue is None:
            issue = await gh.post(f"/repos/{repo.full_name}/issues", data={
                "title": DASHBOARD_TITLE, "body": body, "labels": [DASHBOARD_LABEL],
            })
            log.info("dashboard issue created",
                     extra={"repository": repo.full_name, "issue": issue.get("number")})
        elif (issue.get("body") or "").replace("\r\n", "\n") != body:
            issue = await gh.patch(
                f"/repos/{repo.full_name}/issues/{issue['number']}", data={"body": body})
            log.info("dashboard issue updated",
                     extra={"repository": repo.full_name, "issue": issue["number"]})
        if len(pages) > 1 or int(issue.get("comments") or 0) > 0:
            await _continue_in_comments(ctx, gh, repo.full_name, int(issue["number"]), pages)
        return issue


def kept_package_pages(rows: list[StatusRow], shown: str, web_url: str) -> list[StatusRow]:
    """Rows whose package page this process does not know (it comes only with the package's
    event, which another replica may have handled) take the one the issue shows already: the
    issue is what the replicas share. Only links to package pages of this GitHub are kept."""
    known = {short: url for short, url in _PACKAGE_LINK.findall(shown)
             if url.startswith(f"{web_url}/") and "/pkgs/container/" in url}
    return [replace(row, package_url=known.get(row.digest[:19]))
            if row.package_url is None and row.digest else row for row in rows]


def newest_delivery(snapshot: Snapshot | None, shown: str, now: datetime) -> str | None:
    """The delivery section of the newer figures: this process's, or the ones the issue shows
    (read by another replica since this one last read them; never figures said to be read
    later than now, which no replica wrote)."""
    found = _DELIVERY.search(shown)
    if found is not None and found.group(1) <= now.isoformat() and (
            snapshot is None or found.group(1) > snapshot.until.isoformat()):
        return found.group(0)
    if snapshot is None:
        return None
    return f"{DELIVERY_MARKER.format(until=snapshot.until.isoformat())}\n" \
           f"{render_section(snapshot)}"


async def _continue_in_comments(ctx: Context, gh: GitHubAPI, full_name: str, number: int,
                                pages: list[str]) -> None:
    parts: dict[int, dict[str, Any]] = {}
    async for comment in gh.getiter(f"/repos/{full_name}/issues/{number}/comments"):
        author = str((comment.get("user") or {}).get("login") or "")
        part = part_number(comment.get("body") or "")
        if part is not None and part not in parts and (
                not ctx.bot_login or author.lower() == ctx.bot_login.lower()):
            parts[part] = comment
    wanted = {part: pages[part] for part in range(1, len(pages))}
    for part in parts:
        if part not in wanted:
            wanted[part] = f"{UNUSED_PART}\n\n{part_marker(part)}"
    for part, text in sorted(wanted.items()):
        await write_comment(gh, full_name, number, text, replacing=parts.get(part))


def schedule_dashboard(ctx: Context, installation_id: int, full_name: str) -> None:
    """Refresh the dashboard a few seconds from now; a burst of changes makes one refresh.

    A refresh already pending is left as it is, so that a steady stream of changes cannot
    postpone the update forever; it reads GitHub when it runs and so sees all of them. While
    the delivery figures are about to be read again (after a merge), the refresh waits for
    them: one edit shows the merge and its figures, where two would each cost a write.
    """
    pending = ctx.scheduler.pending()
    if _dashboard_key(full_name) in pending:
        return
    delivery = pending.get(_delivery_key(full_name))
    _dashboard_at(ctx, installation_id, full_name,
                  ctx.clock() + DEBOUNCE if delivery is None else delivery + DEBOUNCE)


def _dashboard_key(full_name: str) -> str:
    return f"dashboard:{full_name.lower()}"


def _delivery_key(full_name: str) -> str:
    return f"delivery:{full_name.lower()}"


def _dashboard_at(ctx: Context, installation_id: int, full_name: str, when: datetime) -> None:
    ctx.scheduler.at(_dashboard_key(full_name), when, DashboardDue(full_name, installation_id))


# After a merge, the repository's delivery figures are read again this much later: a train of
# merges makes one read, and /metrics shows the merge well within a minute.
DELIVERY_DEBOUNCE = timedelta(seconds=20)


def schedule_delivery(ctx: Context, installation_id: int, full_name: str) -> None:
    """Read the repository's delivery figures again shortly (a pending read is kept, so a
    stream of merges cannot postpone it), and refresh the dashboard once they are read (a
    refresh already pending moves there)."""
    if _delivery_key(full_name) in ctx.scheduler.pending():
        return
    when = ctx.clock() + DELIVERY_DEBOUNCE
    ctx.scheduler.at(_delivery_key(full_name), when, DeliveryDue(full_name, installation_id))
    _dashboard_at(ctx, installation_id, full_name, when + DEBOUNCE)


async def refresh_repo_delivery(dashboards: DashboardCapabilities, gh: GitHubAPI,
                                repo: DeploymentRepo) -> None:
    """One repository's figures read now (after a merge), and its dashboard scheduled."""
    ctx = dashboards.ctx
    dashboards.delivery.store(await read_snapshot(ctx, gh, repo, ctx.clock()))
    installation = getattr(gh, "installation_id", None)
    if installation is not None:
        schedule_dashboard(ctx, int(installation), repo.full_name)


async def refresh_delivery(dashboards: DashboardCapabilities) -> int:
    """Read every deployment repository's figures when due, and schedule its dashboard;
    returns how many were read."""
    ctx, board = dashboards.ctx, dashboards.delivery
    now = ctx.clock()
    if not board.due(now):
        return 0
    board.read_at(now)
    read = 0
    async for installation in ctx.clients.app().getiter("/app/installations?per_page=100"):
        installation_id = int(installation["id"])
        try:
            gh = await ctx.clients.installation(installation_id)
            for repo in await dashboards.policies.load(gh, installation_id):
                board.store(await read_snapshot(ctx, gh, repo, now))
                schedule_dashboard(ctx, installation_id, repo.full_name)
                read += 1
        except gidgethub.GitHubException as exc:
            log.warning("reading the delivery figures failed",
                        extra={"installation": installation_id, "error": str(exc)})
    return read
