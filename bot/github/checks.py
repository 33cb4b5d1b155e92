"""Check runs as Conveyor writes them: one builder for the request body, create and update."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.text import format_time


def check_output(title: str, summary: str, *, text: str | None = None,
                 annotations: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A check run's ``output``; ``text`` and ``annotations`` only when given."""
    output: dict[str, Any] = {"title": title, "summary": summary}
    if text is not None:
        output["text"] = text
    if annotations is not None:
        output["annotations"] = list(annotations)
    return output


def check_run(name: str, output: Mapping[str, Any], *, status: str = "completed",
              conclusion: str | None = None, completed_at: datetime | None = None,
              external_id: str | None = None, details_url: str | None = None
              ) -> dict[str, Any]:
    """The body of a create or update request. A run in progress carries no conclusion and no
    completion time; ``details_url`` is kept only when it is an http(s) URL."""
    data: dict[str, Any] = {"name": name, "status": status, "output": dict(output)}
    if status == "completed":
        if conclusion is not None:
            data["conclusion"] = conclusion
        if completed_at is not None:
            data["completed_at"] = format_time(completed_at)
    if external_id is not None:
        data["external_id"] = external_id
    if details_url and details_url.startswith(("http://", "https://")):
        data["details_url"] = details_url
    return data


async def create_check_run(gh: GitHubAPI, full_name: str, head_sha: str, run: Mapping[str, Any]
                           ) -> dict[str, Any]:
    created: dict[str, Any] = await gh.post(f"/repos/{full_name}/check-runs",
                                            data={**run, "head_sha": head_sha})
    return created


async def update_check_run(gh: GitHubAPI, full_name: str, run_id: int, data: Mapping[str, Any]
                           ) -> None:
    await gh.patch(f"/repos/{full_name}/check-runs/{run_id}", data=dict(data))


def is_own(run: Mapping[str, Any], own_app_id: int | None, own_login: str) -> bool:
    """Whether this app made the check run (its id where known, else its bot login)."""
    app = run.get("app") or {}
    if own_app_id is not None and app.get("id") is not None:
        return int(app["id"]) == own_app_id
    return bool(own_login) and f"{app.get('slug', '')}[bot]".lower() == own_login.lower()


async def own_run(gh: GitHubAPI, full_name: str, sha: str, name: str, own_app_id: int | None,
                  own_login: str) -> dict[str, Any] | None:
    """This app's check run ``name`` on commit ``sha`` (another app's of the same name is not
    ours), or None."""
    runs = await gh.getitem(f"/repos/{full_name}/commits/{sha}/check-runs?"
                            f"check_name={quote(name, safe='')}&filter=latest")
    return next((dict(run) for run in runs.get("check_runs") or []
                 if run.get("name") == name and is_own(run, own_app_id, own_login)), None)
