"""GHCR's side of the sandbox: the OCI Distribution API for the images the emulator publishes.

Served below `/v2/` beside the REST API (point the bot at it with
`CONVEYOR_REGISTRY_ENDPOINTS=ghcr.io=<emulator URL>`). As GHCR does, every request needs a
Bearer token: a request without one gets 401 with a `WWW-Authenticate: Bearer realm=…/token,
service="ghcr.io",scope="repository:<name>:pull"` challenge; `/token` hands out tokens
anonymously for public packages and only to known credentials (HTTP Basic) for private ones.
Manifests are served with `Docker-Content-Digest` and an ETag, only in a media type the
request's `Accept` admits (distribution's rule: an index is never sent to a client that does not
ask for one); tag lists page with `n`/`last` and a `Link` header as the distribution spec says.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from conveyor_emulator.faults.requestlog import RequestEntry, RequestLog
from conveyor_emulator.registry.images import OCI_INDEX, Blob, Image

if TYPE_CHECKING:
    from conveyor_emulator.store.state import Package
    from conveyor_emulator.store.world import World

SERVICE = "ghcr.io"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MAX_PAGE = 1000


@dataclass
class RegistryState:
    blobs: dict[str, Blob] = field(default_factory=dict)
    private: set[tuple[str, str]] = field(default_factory=set)
    credentials: dict[str, str] = field(default_factory=dict)  # username → password
    tokens: dict[str, set[str]] = field(default_factory=dict)  # token → readable names
    requests: RequestLog = field(default_factory=RequestLog)
    # a status every /v2/ request answers with (an outage or a refusal, for tests)
    fail_with: int | None = None

    def store(self, image: Image) -> None:
        self.blobs.update(image.blobs)

    def make_private(self, owner: str, package: str) -> None:
        self.private.add((owner.lower(), package.lower()))

    def add_credential(self, username: str, password: str) -> None:
        self.credentials[username] = password


def _errors(status: int, code: str, message: str, headers: dict[str, str] | None = None
            ) -> web.Response:
    return web.json_response({"errors": [{"code": code, "message": message}]}, status=status,
                             headers=headers)


def register(app: web.Application, world: World, state: RegistryState) -> None:
    def package_of(name: str) -> Package | None:
        owner, _, package = name.partition("/")
        return world.packages.get((owner.lower(), package.lower())) if package else None

    def log(request: web.Request, template: str, response: web.StreamResponse) -> None:
        state.requests.add(RequestEntry(request.method, template, response.status, None, False,
                                        request.path))

    def challenge(name: str) -> dict[str, str]:
        scope = f"repository:{name}:pull" if name else ""
        value = f'Bearer realm="{world.web_url}/token",service="{SERVICE}"'
        return {"WWW-Authenticate": value + (f',scope="{scope}"' if scope else "")}

    def authorised(request: web.Request, name: str) -> web.Response | None:
        if state.fail_with is not None:
            return _errors(state.fail_with, "UNAVAILABLE" if state.fail_with >= 500 else "DENIED",
                           "refused by the emulator's fault setting")
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        readable = state.tokens.get(token.strip()) if scheme.lower() == "bearer" else None
        if readable is None or (name and name.lower() not in readable):
            return _errors(401, "UNAUTHORIZED", "authentication required", challenge(name))
        return None

    async def base(request: web.Request) -> web.StreamResponse:
        response = authorised(request, "") or web.json_response({})
        log(request, "/v2/", response)
        return response

    async def token(request: web.Request) -> web.StreamResponse:
        scope = request.query.get("scope", "")
        kind, _, rest = scope.partition(":")
        name, _, actions = rest.rpartition(":")
        user = _basic_user(request.headers.get("Authorization", ""), state.credentials)
        response: web.StreamResponse
        if kind != "repository" or "pull" not in actions.split(","):
            response = _errors(400, "DENIED", "scope must be repository:<name>:pull")
        else:
            owner, _, package = name.lower().partition("/")
            if (owner, package) in state.private and user is None:
                response = _errors(401, "UNAUTHORIZED", "authentication required")
            else:
                value = secrets.token_urlsafe(24)
                state.tokens[value] = {name.lower()}
                response = web.json_response({"token": value, "expires_in": 300})
        log(request, "/token", response)
        return response

    async def manifest(request: web.Request) -> web.StreamResponse:
        name, reference = request.match_info["name"], request.match_info["reference"]
        response = authorised(request, name) or _manifest(request, package_of(name), reference,
                                                          state)
        log(request, "/v2/{name}/manifests/{reference}", response)
        return response

    async def blob(request: web.Request) -> web.StreamResponse:
        name, digest = request.match_info["name"], request.match_info["digest"]
        response = authorised(request, name)
        if response is None:
            found = state.blobs.get(digest) if package_of(name) is not None else None
            response = (web.Response(body=found.data, content_type="application/octet-stream",
                                     headers={"Docker-Content-Digest": digest})
                        if found is not None else
                        _errors(404, "BLOB_UNKNOWN", "blob unknown to registry"))
        log(request, "/v2/{name}/blobs/{digest}", response)
        return response

    async def tags(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        response = authorised(request, name) or _tags(request, name, package_of(name))
        log(request, "/v2/{name}/tags/list", response)
        return response

    app.router.add_get("/v2/", base)
    app.router.add_get("/token", token)
    app.router.add_get(r"/v2/{name:[a-z0-9._/-]+}/tags/list", tags)
    app.router.add_route("GET", r"/v2/{name:[a-zA-Z0-9._/-]+}/manifests/{reference}", manifest)
    app.router.add_route("HEAD", r"/v2/{name:[a-zA-Z0-9._/-]+}/manifests/{reference}", manifest)
    app.router.add_get(r"/v2/{name:[a-z0-9._/-]+}/blobs/{digest}", blob)


def _basic_user(header: str, credentials: dict[str, str]) -> str | None:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value.strip()).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user if user in credentials and secrets.compare_digest(credentials[user], password) \
        else None


def _manifest(request: web.Request, package: Package | None, reference: str,
              state: RegistryState) -> web.Response:
    unknown = _errors(404, "MANIFEST_UNKNOWN", "manifest unknown")
    if package is None:
        return _errors(404, "NAME_UNKNOWN", "repository name not known to registry")
    if reference.startswith("sha256:"):
        version = next((v for v in package.versions if v.name == reference), None)
    else:
        version = next((v for v in package.versions if reference in v.tags), None)
    found = state.blobs.get(version.name) if version is not None else None
    if found is None:
        return unknown
    accept = request.headers.get("Accept", "")
    if found.media_type == OCI_INDEX and OCI_INDEX not in accept and DOCKER_LIST not in accept:
        return _errors(404, "MANIFEST_UNKNOWN",
                       "OCI index found, but accept header does not support OCI indexes")
    etag = f'"{found.digest}"'
    headers = {"Docker-Content-Digest": found.digest, "ETag": etag}
    if etag in {c.strip() for c in request.headers.get("If-None-Match", "").split(",")}:
        return web.Response(status=304, headers=headers)
    return web.Response(body=found.data, headers={**headers, "Content-Type": found.media_type})


def _tags(request: web.Request, name: str, package: Package | None) -> web.Response:
    if package is None:
        return _errors(404, "NAME_UNKNOWN", "repository name not known to registry")
    every = sorted({t for v in package.versions for t in v.tags})
    last = request.query.get("last")
    if last:
        every = [t for t in every if t > last]
    try:
        size = min(int(request.query.get("n", MAX_PAGE)), MAX_PAGE)
    except ValueError:
        return _errors(400, "PAGINATION_NUMBER_INVALID", "invalid number of results requested")
    page = every[:size]
    headers: dict[str, Any] = {}
    if len(every) > size and page:
        headers["Link"] = f'</v2/{name}/tags/list?n={size}&last={page[-1]}>; rel="next"'
    return web.json_response({"name": name, "tags": page}, headers=headers)
