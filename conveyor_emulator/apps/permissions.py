"""Which installation permission each route needs, and GitHub's 403 when a token lacks it."""

from __future__ import annotations

from conveyor_emulator.errors import ApiError
from conveyor_emulator.store.state import Token

# (fragment of the path template, permission); the first match wins
_BY_PATH: list[tuple[str, tuple[str, ...]]] = [
    ("/check-runs", ("checks",)),
    ("/deployments", ("deployments",)),
    ("/statuses", ("statuses",)),
    ("/status", ("statuses",)),
    ("/pulls", ("pull_requests",)),
    ("/issues", ("issues", "pull_requests")),
    ("/labels", ("issues", "pull_requests")),
    ("/collaborators", ("metadata",)),
    ("/attestations", ("attestations",)),
    ("/actions/", ("actions",)),
    ("/packages/", ("packages",)),
    ("/teams/", ("members",)),
    ("/contents/", ("contents",)),
    ("/git/", ("contents",)),
    ("/commits", ("contents",)),
    ("/compare/", ("contents",)),
    ("/branches/", ("contents",)),
    ("/tags", ("contents",)),
    ("/releases", ("contents",)),
]
_LEVEL = {"read": 1, "write": 2, "admin": 3}


def required(method: str, template: str) -> tuple[tuple[str, ...], str] | None:
    """(acceptable permissions, level) for a route, or None when any token will do."""
    level = "read" if method in ("GET", "HEAD") else "write"
    if template.startswith("/repos/{owner}/{repo}/commits/{commit_sha}/pulls"):
        return ("pull_requests", "contents"), "read"
    for fragment, names in _BY_PATH:
        if fragment in template:
            return names, level
    if template == "/repos/{owner}/{repo}":
        return ("metadata",), "read"
    return None


def check(token: Token, method: str, template: str) -> None:
    need = required(method, template)
    if need is None:
        return
    names, level = need
    for name in names:
        granted = token.permissions.get(name)
        if granted is not None and _LEVEL.get(granted, 0) >= _LEVEL[level]:
            return
    raise ApiError(403, "Resource not accessible by integration")
