"""Plain HTML pages at the `html_url`s the emulator hands out for pull requests and issues.

GitHub's web pages are not part of its API; these pages exist so that a link printed by the
sandbox (or written by Conveyor into a PR body) opens something a person can read: the title,
state, body, check runs of the head commit and the comments. They are read-only.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from conveyor_emulator.driver.core import EmulatorCore

_STYLE = ("body{font:15px/1.45 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
          "pre{white-space:pre-wrap;background:#f6f8fa;padding:.6em;border-radius:6px}"
          "h2{border-bottom:1px solid #ddd}")


def _page(title: str, parts: list[str]) -> web.Response:
    body = "".join(parts)
    return web.Response(
        text=f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
             f"<style>{_STYLE}</style><body>{body}</body>", content_type="text/html")


def _text(value: Any) -> str:
    return f"<pre>{html.escape(str(value or ''))}</pre>"


def _comments(em: EmulatorCore, repo: str, number: int) -> list[str]:
    parts = ["<h2>Comments</h2>"]
    for comment in em.comments(repo, number):
        parts += [f"<h3>{html.escape(str(comment['user']['login']))} · "
                  f"{html.escape(str(comment['created_at']))}</h3>", _text(comment["body"])]
    return parts


def register(app: web.Application, em: EmulatorCore) -> None:
    routes = web.RouteTableDef()

    def item(request: web.Request, pulls: bool) -> tuple[str, dict[str, Any]]:
        repo = f"{request.match_info['owner']}/{request.match_info['repo']}"
        number = int(request.match_info["number"])
        try:
            found = em.pulls(repo, state="all") if pulls else em.issues(repo)
        except KeyError:
            raise web.HTTPNotFound(text=f"no repository {repo}\n") from None
        match = next((entry for entry in found if entry["number"] == number), None)
        if match is None:
            raise web.HTTPNotFound(text=f"no {'pull request' if pulls else 'issue'} "
                                        f"{repo}#{number}\n")
        return repo, match

    @routes.get(r"/{owner}/{repo}/pull/{number:\d+}")
    async def pull(request: web.Request) -> web.Response:
        repo, pr = item(request, pulls=True)
        state = "merged" if pr["merged"] else pr["state"]
        parts = [f"<h1>{html.escape(pr['title'])} #{pr['number']}</h1>",
                 f"<p>{html.escape(repo)} · {state} · {html.escape(pr['head']['ref'])} → "
                 f"{html.escape(pr['base']['ref'])} · head {pr['head']['sha'][:7]}</p>",
                 _text(pr["body"]), "<h2>Checks on the head commit</h2>"]
        for run in em.check_runs(repo, pr["head"]["sha"]):
            verdict = run["conclusion"] if run["status"] == "completed" else run["status"]
            parts += [f"<h3>{html.escape(run['name'])}: {html.escape(str(verdict))} — "
                      f"{html.escape(str(run['output'].get('title') or ''))}</h3>",
                      _text(run["output"].get("summary"))]
        return _page(pr["title"], parts + _comments(em, repo, pr["number"]))

    @routes.get(r"/{owner}/{repo}/issues/{number:\d+}")
    async def issue(request: web.Request) -> web.Response:
        repo, found = item(request, pulls=False)
        parts = [f"<h1>{html.escape(found['title'])} #{found['number']}</h1>",
                 f"<p>{html.escape(repo)} · {found['state']}</p>", _text(found["body"])]
        return _page(found["title"], parts + _comments(em, repo, found["number"]))

    @routes.get("/{owner}/{repo}/pulls")
    async def pulls(request: web.Request) -> web.Response:
        repo = f"{request.match_info['owner']}/{request.match_info['repo']}"
        try:
            found = em.pulls(repo, state="all")
        except KeyError:
            raise web.HTTPNotFound(text=f"no repository {repo}\n") from None
        rows = [f"<li><a href='{html.escape(pr['html_url'])}'>#{pr['number']} "
                f"{html.escape(pr['title'])}</a> ({'merged' if pr['merged'] else pr['state']})"
                "</li>" for pr in found]
        return _page(f"{repo} pull requests",
                     [f"<h1>Pull requests of {html.escape(repo)}</h1><ul>", *rows, "</ul>"])

    app.add_routes(routes)
