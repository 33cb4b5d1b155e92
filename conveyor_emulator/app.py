"""The aiohttp application: one dispatcher applying faults, auth, rate limits, ETags and
OpenAPI checks around the route handlers."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aiohttp import web

from conveyor_emulator.accounts import routes_people
from conveyor_emulator.apps import apps_refused, permissions, routes_app
from conveyor_emulator.apps.auth import lookup_token, unverified_issuer, verify_jwt
from conveyor_emulator.checks import routes_checks, routes_deployments
from conveyor_emulator.errors import ApiError
from conveyor_emulator.faults import limits
from conveyor_emulator.faults.requestlog import RequestEntry
from conveyor_emulator.faults.switches import SECONDARY_DOCS, SECONDARY_MESSAGE
from conveyor_emulator.issues import routes_issues
from conveyor_emulator.pulls import routes_pulls
from conveyor_emulator.releases import routes_releases
from conveyor_emulator.repos import routes_archive, routes_git, routes_repos
from conveyor_emulator.routing import DOCS, Ctx, Reply, Route, Router

if TYPE_CHECKING:
    from conveyor_emulator.driver.core import EmulatorCore

PREFIX = "/api/v3"


def build_router() -> Router:
    router = Router()
    for module in (routes_app, routes_repos, routes_git, routes_pulls, routes_issues,
                   routes_checks, routes_deployments, routes_people, routes_releases,
                   routes_archive):
        router.include(module.router)
    return router


ROUTER = build_router()


def error_body(exc: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {"message": exc.message, "documentation_url": DOCS,
                            "status": str(exc.status)}
    if exc.errors is not None:
        body["errors"] = exc.errors
    return body


def _check_name(template: str, reply: Reply) -> str:
    """The check run a request created or updated, by name (for counting which check runs an
    app writes)."""
    if not template.endswith(("/check-runs", "/check-runs/{check_run_id}")) \
            or not isinstance(reply.body, dict):
        return ""
    return str(reply.body.get("name") or "")


class Dispatcher:
    def __init__(self, emulator: EmulatorCore) -> None:
        self.em = emulator

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        em = self.em
        # when the request arrived, before any delay a fault adds: what it was sent knowing
        arrived = em.secondary.timer()
        raw = request.raw_path.split("?", 1)[0]
        path = raw[len(PREFIX):] if raw.startswith(PREFIX) else raw
        route, params, _ = ROUTER.match(request.method, path or "/")
        params = {k: unquote(v) for k, v in params.items()}
        faults = em.faults
        if faults.latency > 0:
            await asyncio.sleep(faults.latency)
        template = route.template if route else path
        rate_key = "anonymous"
        installation_id: int | None = None
        if em.dice.roll(faults.error_rate):
            em.injected["502"] += 1
            return self._finish(request, route, template, Reply(502, {
                "message": "Server Error"}), rate_key, None, count=False)
        if em.dice.roll(faults.timeout_rate):
            em.injected["slow answer"] += 1
            await asyncio.sleep(faults.timeout_seconds)
        body: Any = None
        ctx: Ctx | None = None
        try:
            if route is None:
                raise ApiError(404, "Not Found")
            raw_body = await request.read() if request.can_read_body else b""
            if raw_body:
                try:
                    body = json.loads(raw_body)
                except ValueError as exc:
                    raise ApiError(400, "Problems parsing JSON") from exc
            ctx = Ctx(request, params, em.world, em.ops, body)
            rate_key, installation_id = self._authenticate(ctx, route)
            if faults.rate_limit_exhausted or (
                    em.rate_limiting and em.rate_limits.remaining(rate_key) <= 0):
                message = (f"API rate limit exceeded for installation ID {installation_id}."
                           if installation_id else "API rate limit exceeded.")
                reply = Reply(faults.rate_limit_status, {
                    "message": message,
                    "documentation_url": "https://docs.github.com/rest/overview/"
                                         "rate-limits-for-the-rest-api"})
                return self._finish(request, route, template, reply, rate_key, installation_id,
                                    count=False, exhausted=True)
            limited = em.secondary.check(rate_key, request.method, template, faults, em.dice,
                                         content_budget=em.rate_limiting, arrived=arrived)
            if limited is not None:
                reply = Reply(403, {"message": SECONDARY_MESSAGE,
                                    "documentation_url": SECONDARY_DOCS}, limited)
                return self._finish(request, route, template, reply, rate_key, installation_id,
                                    count=False)
            self._scope(ctx, route)
            if ctx.token is not None:
                if (request.method, route.template) in apps_refused.refused_operations():
                    em.violations.append(
                        f"{request.method} {route.template}: called with an installation "
                        "token, which GitHub refuses (enabledForGitHubApps: false)")
                apps_refused.check(request.method, route.template)
                permissions.check(ctx.token, request.method, route.template)
            if em.validator is not None:
                em.violations.extend(em.validator.check_request(
                    request.method, route.template, params, dict(request.query), body))
            limits.check(request.method, route.template, body)
            transient = em.transients.check(request.method, route.template, params, body,
                                            faults, em.dice)
            if transient is not None:
                raise ApiError(transient[0], transient[1]["message"],
                               errors=transient[1].get("errors"))
            reply = await route.handler(ctx)
            if reply.status < 300:
                em.transients.created(route.template, request.method, body)
        except ApiError as exc:
            reply = Reply(exc.status, error_body(exc))
        return self._finish(request, route, template, reply, rate_key, installation_id)

    def _authenticate(self, ctx: Ctx, route: Route) -> tuple[str, int | None]:
        em = self.em
        header = ctx.request.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        scheme = scheme.lower()
        if route.auth == "none":
            return "anonymous", None
        if not credential or scheme not in ("token", "bearer"):
            raise ApiError(401, "Requires authentication")
        if route.auth == "jwt":
            if credential.count(".") != 2:
                raise ApiError(401, "A JSON web token could not be decoded")
            verify_jwt(credential, *self._app_key(credential))
            ctx.jwt_app = True
            return "app", None
        if credential.count(".") == 2:
            raise ApiError(401, "Bad credentials")
        token = lookup_token(em.world, credential)
        ctx.token = token
        ctx.installation = em.world.installations.get(token.installation_id)
        if ctx.installation is None:
            raise ApiError(401, "Bad credentials")
        return f"installation:{token.installation_id}", token.installation_id

    def _app_key(self, credential: str) -> tuple[str, int]:
        """The public key and id of the app a JWT claims to be: the emulator's own app, or
        one registered through the manifest flow (served as the same app)."""
        em = self.em
        iss = str(unverified_issuer(credential))
        for created in em.world.manifest_apps.values():
            if str(created.id) == iss:
                return created.public_pem, created.id
        return em.app_public_key_pem, em.world.app_id

    def _scope(self, ctx: Ctx, route: Route) -> None:
        if route.auth != "token" or "owner" not in ctx.params or "repo" not in ctx.params:
            return
        world = ctx.world
        repo = world.repo(ctx.params["owner"], ctx.params["repo"])
        token = ctx.token
        inst = ctx.installation
        if repo is None or token is None or inst is None:
            raise ApiError(404, "Not Found")
        if inst.account.lower() != repo.owner.lower() or (
                inst.repo_ids is not None and repo.id not in inst.repo_ids) or (
                token.repo_ids is not None and repo.id not in token.repo_ids):
            raise ApiError(404, "Not Found")
        ctx.repo_obj = repo

    def _finish(self, request: web.Request, route: Route | None, template: str, reply: Reply,
                rate_key: str, installation_id: int | None, *, count: bool = True,
                exhausted: bool = False) -> web.Response:
        em = self.em
        headers = dict(reply.headers)
        data = b""
        if reply.status != 204 and reply.body is not None:
            data = json.dumps(reply.body, separators=(",", ":")).encode()
        was_304 = False
        if request.method == "GET" and reply.status == 200:
            etag = 'W/"' + hashlib.sha1(data).hexdigest() + '"'
            headers["ETag"] = etag
            match = request.headers.get("If-None-Match", "")
            candidates = {c.strip() for c in match.split(",")}
            strong = etag[2:]
            if etag in candidates or strong in candidates:
                was_304 = True
        if count and not was_304 and rate_key != "anonymous":
            em.rate_limits.spend(rate_key)
        if em.rate_limiting or exhausted:
            # A server without rate limits has no budget to report ("Rate limiting is not
            # enabled", its `GET /rate_limit` answers): no `x-ratelimit-*` headers.
            headers.update(em.rate_limits.headers(rate_key, exhausted=exhausted))
        headers["X-GitHub-Media-Type"] = "github.v3; format=json"
        headers["X-GitHub-Request-Id"] = em.world.random_hex(8).upper()
        status = 304 if was_304 else reply.status
        em.requests.add(RequestEntry(request.method, template, status, installation_id, was_304,
                                     request.path, em.rate_limits.timer(),
                                     check_name=_check_name(template, reply)))
        if em.validator is not None and route is not None and not was_304 \
                and reply.status not in (502,):
            em.violations.extend(em.validator.check_response(
                request.method, route.template, reply.status, reply.body))
        if was_304:
            return web.Response(status=304, headers=headers)
        if not data:
            return web.Response(status=status, headers=headers)
        return web.Response(status=status, body=data, headers=headers,
                            content_type="application/json", charset="utf-8")


def build_app(emulator: EmulatorCore) -> web.Application:
    from conveyor_emulator import control, web_views
    from conveyor_emulator.graphql_api import endpoint as graphql_api
    from conveyor_emulator.registry import distribution as registry

    app = web.Application(client_max_size=64 * 1024 * 1024)
    control.register(app, emulator)
    web_views.register(app, emulator)
    registry.register(app, emulator.world, emulator.registry)
    dispatcher = Dispatcher(emulator)

    async def api(request: web.Request) -> web.StreamResponse:
        return await dispatcher(request)

    app.router.add_route("*", PREFIX + "/{tail:.*}", api)
    graphql_api.register(app, emulator)
    routes_archive.register_downloads(app, emulator.world)
    app.router.add_route("GET", "/", _home)
    return app


async def _home(request: web.Request) -> web.Response:
    return web.Response(text="GitHub emulator (Conveyor sandbox)\n")
