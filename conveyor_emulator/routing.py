"""Route table with GitHub's path templates, request context, replies and pagination."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from aiohttp import web

from conveyor_emulator.errors import ApiError
from conveyor_emulator.store.state import JSON, Installation, Repo, Token
from conveyor_emulator.store.world import World

if TYPE_CHECKING:
    from conveyor_emulator.ops import Ops

DOCS = "https://docs.github.com/rest"
# parameters whose values may contain slashes
_GREEDY = {"path", "ref", "basehead", "branch", "tag", "name", "package_name"}
_NUMERIC = re.compile(r".*(_id|_number)$")


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Ctx:
    request: web.Request
    params: dict[str, str]
    world: World
    ops: Ops
    body: Any
    token: Token | None = None
    installation: Installation | None = None
    jwt_app: bool = False
    repo_obj: Repo | None = None

    @property
    def query(self) -> Any:
        return self.request.query

    @property
    def actor(self) -> str:
        return self.world.bot_login

    @property
    def repo(self) -> Repo:
        assert self.repo_obj is not None
        return self.repo_obj

    def json(self) -> JSON:
        if not isinstance(self.body, dict):
            raise ApiError(400, "Problems parsing JSON")
        return self.body

    def int_param(self, name: str) -> int:
        try:
            return int(self.params[name])
        except (KeyError, ValueError) as exc:
            raise ApiError(404, "Not Found") from exc

    def page(self, items: Sequence[Any], *, wrap: str | None = None,
             extra: JSON | None = None) -> Reply:
        """One page of `items` with a Link header, like GitHub's offset pagination."""
        try:
            per_page = max(1, min(100, int(self.query.get("per_page", "30"))))
            page = max(1, int(self.query.get("page", "1")))
        except ValueError as exc:
            raise ApiError(422, "Validation Failed") from exc
        total = len(items)
        last = max(1, -(-total // per_page))
        chunk = list(items[(page - 1) * per_page: page * per_page])
        links = []
        base = self.request.url
        query = dict(self.request.query)

        def url(n: int) -> str:
            q = {**query, "page": str(n)}
            return str(base.with_query(None)) + "?" + urlencode(q)

        if page < last:
            links.append(f'<{url(page + 1)}>; rel="next"')
            links.append(f'<{url(last)}>; rel="last"')
        if page > 1:
            links.append(f'<{url(1)}>; rel="first"')
            links.append(f'<{url(min(page - 1, last))}>; rel="prev"')
        headers = {"Link": ", ".join(links)} if links else {}
        body: Any = chunk
        if wrap is not None:
            body = {"total_count": total, wrap: chunk, **(extra or {})}
        return Reply(200, body, headers)


Handler = Callable[[Ctx], Awaitable[Reply]]


@dataclass
class Route:
    method: str
    template: str
    handler: Handler
    auth: str  # "token" | "jwt" | "none" | "any"
    regex: re.Pattern[str]
    literal_segments: int


def compile_template(template: str) -> re.Pattern[str]:
    pattern = ""
    for part in re.split(r"(\{[^}]+\})", template):
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            if name in _GREEDY:
                pattern += f"(?P<{name}>.+)"
            elif _NUMERIC.match(name):
                pattern += f"(?P<{name}>[0-9]+)"
            else:
                pattern += f"(?P<{name}>[^/]+)"
        else:
            pattern += re.escape(part)
    return re.compile("^" + pattern + "$")


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []

    def add(self, method: str, template: str, auth: str = "token") -> Callable[[Handler],
                                                                              Handler]:
        def register(handler: Handler) -> Handler:
            literal = sum(1 for s in template.split("/") if s and not s.startswith("{"))
            self.routes.append(Route(method, template, handler, auth, compile_template(template),
                                     literal))
            self.routes.sort(key=lambda r: -r.literal_segments)
            return handler
        return register

    def include(self, other: Router) -> None:
        self.routes.extend(other.routes)
        self.routes.sort(key=lambda r: -r.literal_segments)

    def match(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """(route, params, path_known): path_known tells 404 from 405."""
        known = False
        for route in self.routes:
            m = route.regex.match(path)
            if m is None:
                continue
            known = True
            if route.method == method:
                return route, m.groupdict(), True
        return None, {}, known

    def templates(self) -> list[tuple[str, str]]:
        return [(r.method, r.template) for r in self.routes]
