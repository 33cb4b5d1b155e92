"""The registry client against answers a distribution registry and its token service give in
their less common cases (token exchanges, redirects to blob storage, retries, oversized or
malformed bodies), served over HTTP on loopback by a scripted registry. The happy paths run
against a real registry in test_real_registry.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web

from bot.registry.client import MAX_TAGS_PAGE_BYTES, RegistryClient, RegistryPolicy
from bot.registry.credentials import Credential
from bot.registry.errors import RegistryError
from bot.registry.names import Repository
from conveyor_emulator.registry.images import OCI_CONFIG, OCI_INDEX, build_image

WEB = Repository("registry.test", "acme/web")
IMAGE = build_image("web:7.0.0", labels={"org.opencontainers.image.revision": "c" * 40})
INDEX = IMAGE.blobs[IMAGE.digest].data
CONFIG_DIGEST, CONFIG = next((d, b.data) for d, b in IMAGE.blobs.items()
                             if b.media_type == OCI_CONFIG)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None
    if_none_match: str | None
    form: dict[str, str] = field(default_factory=dict)


class ScriptedRegistry:
    """Answers each path from `routes` (path → handler), recording every request it gets."""

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.seen: list[Seen] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        form = dict(await request.post()) if request.method == "POST" else {}
        self.seen.append(Seen(request.method, request.path_qs, request.headers.get("Authorization"),
                              request.headers.get("If-None-Match"),
                              {k: str(v) for k, v in form.items()}))
        handler = self.routes.get(request.path)
        if handler is None:
            return web.Response(status=404)
        return await handler(request)

    def paths(self) -> list[str]:
        return [f"{seen.method} {seen.path}" for seen in self.seen]


@pytest.fixture
async def registry() -> AsyncIterator[ScriptedRegistry]:
    scripted = ScriptedRegistry()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", scripted.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    scripted.url = f"http://{host}:{port}"
    try:
        yield scripted
    finally:
        await runner.cleanup()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_client(session: aiohttp.ClientSession, registry: ScriptedRegistry, *,
                credentials: dict[str, Credential] | None = None,
                clock: Clock | None = None, slept: list[float] | None = None,
                endpoint: str | None = None, **policy: float) -> RegistryClient:
    async def sleep(seconds: float) -> None:
        if slept is not None:
            slept.append(seconds)

    return RegistryClient(lambda: session, credentials=credentials,
                          endpoints={"registry.test": endpoint or registry.url},
                          policy=RegistryPolicy(timeout=5, **policy),  # type: ignore[arg-type]
                          sleep=sleep, clock=clock or Clock())


def index(etag: str | None = None) -> Handler:
    async def answer(request: web.Request) -> web.Response:
        headers = {"Content-Type": OCI_INDEX, "Docker-Content-Digest": IMAGE.digest}
        if etag is not None:
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers={"ETag": etag})
            headers["ETag"] = etag
        return web.Response(body=INDEX, headers=headers)
    return answer


def fixed(status: int, body: bytes = b"", **headers: str) -> Handler:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(status=status, body=body, headers=headers)
    return answer


MANIFEST = "/v2/acme/web/manifests/7.0.0"
TAGS = "/v2/acme/web/tags/list"


# -- tokens ----------------------------------------------------------------------------------------
def bearer_gate(registry: ScriptedRegistry, inner: Handler, token: str, *,
                service: bool = True) -> Handler:
    async def answer(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") == f"Bearer {token}":
            return await inner(request)
        params = f'realm="{registry.url}/token"'
        if service:
            params += ',service="registry.test"'
        return web.Response(status=401, headers={"WWW-Authenticate": f"Bearer {params}"})
    return answer


async def test_an_identity_token_is_exchanged_by_post_and_the_token_reused(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    async def token(request: web.Request) -> web.Response:
        return web.json_response({"access_token": "t-from-refresh", "expires_in": 300})

    registry.routes = {MANIFEST: bearer_gate(registry, index(), "t-from-refresh"),
                       "/token": token}
    client = make_client(session, registry,
                         credentials={"registry.test": Credential(identity_token="idt-secret")})
    manifest = await client.manifest(WEB, "7.0.0")
    assert manifest is not None and manifest.digest == IMAGE.digest
    post = registry.seen[1]
    assert (post.method, post.path) == ("POST", "/token")
    assert post.form == {"scope": "repository:acme/web:pull", "service": "registry.test",
                         "grant_type": "refresh_token", "client_id": "conveyor",
                         "refresh_token": "idt-secret"}
    # a tag asked again past its freshness: the cached token goes along, no second exchange
    client._clock.now += 60  # type: ignore[attr-defined]
    await client.manifest(WEB, "7.0.0")
    assert registry.paths() == [f"GET {MANIFEST}", "POST /token", f"GET {MANIFEST}",
                                f"GET {MANIFEST}"]
    assert registry.seen[-1].authorization == "Bearer t-from-refresh"


async def test_an_anonymous_token_without_a_service_and_a_realm_with_a_query(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    async def challenge(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") == "Bearer anon":
            return await index()(request)
        return web.Response(status=401, headers={
            "WWW-Authenticate": f'Bearer realm="{registry.url}/token?account=none"'})

    async def token(request: web.Request) -> web.Response:
        return web.json_response({"token": "anon"})

    registry.routes = {MANIFEST: challenge, "/token": token}
    client = make_client(session, registry)
    assert await client.manifest(WEB, "7.0.0") is not None
    assert registry.paths()[1] == "GET /token?account=none&scope=repository:acme/web:pull"
    assert registry.seen[1].authorization is None


@pytest.mark.parametrize(("body", "message"), [
    (b"<html>sign in</html>", "a token answer that is not JSON"),
    (b'["token"]', "a token answer that is not JSON"),
    (b'{"token": ""}', "a token answer without a token"),
    (b'{"token": "t", "expires_in": "soon"}', "a token answer that is not JSON"),
])
async def test_unusable_token_answers(registry: ScriptedRegistry, session: aiohttp.ClientSession,
                                      body: bytes, message: str) -> None:
    registry.routes = {MANIFEST: bearer_gate(registry, index(), "never"),
                       "/token": fixed(200, body, **{"Content-Type": "application/json"})}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).manifest(WEB, "7.0.0")
    assert str(failed.value) == f"registry registry.test sent {message} for acme/web"


async def test_a_refused_token_request_is_a_refusal(registry: ScriptedRegistry,
                                                     session: aiohttp.ClientSession) -> None:
    registry.routes = {MANIFEST: bearer_gate(registry, index(), "never"),
                       "/token": fixed(403)}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).manifest(WEB, "7.0.0")
    assert failed.value.status == 403
    assert str(failed.value).endswith("set CONVEYOR_REGISTRY_AUTH_FILE")


async def test_a_realm_that_is_not_http_gets_no_request(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    registry.routes = {MANIFEST: fixed(401, **{
        "WWW-Authenticate": 'Bearer realm="file:///etc/token",service="registry.test"'})}
    client = make_client(session, registry,
                         credentials={"registry.test": Credential("ci", "pw")})
    with pytest.raises(RegistryError) as failed:
        await client.manifest(WEB, "7.0.0")
    assert str(failed.value) == ("registry registry.test sent a token realm that is not https "
                                 "for acme/web")
    assert registry.paths() == [f"GET {MANIFEST}"]


@pytest.mark.parametrize("header", ['Bearer service="registry.test"', 'Negotiate abc'])
async def test_a_challenge_the_client_cannot_answer_returns_the_401(
        registry: ScriptedRegistry, session: aiohttp.ClientSession, header: str) -> None:
    registry.routes = {MANIFEST: fixed(401, **{"WWW-Authenticate": header})}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).manifest(WEB, "7.0.0")
    assert failed.value.status == 401
    assert registry.paths() == [f"GET {MANIFEST}"]


async def test_a_basic_challenge_without_credentials_is_not_answered(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    registry.routes = {MANIFEST: fixed(401, **{"WWW-Authenticate": 'Basic realm="r"'})}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).manifest(WEB, "7.0.0")
    assert failed.value.status == 401 and registry.paths() == [f"GET {MANIFEST}"]


# -- conditional requests and caches ---------------------------------------------------------------
async def test_a_stale_tag_is_asked_conditionally_and_a_304_keeps_the_manifest(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    registry.routes = {MANIFEST: index(etag='"idx-1"')}
    clock = Clock()
    client = make_client(session, registry, clock=clock)
    first = await client.manifest(WEB, "7.0.0")
    assert await client.manifest(WEB, "7.0.0") is first  # fresh: not asked again
    clock.now += 16
    assert await client.manifest(WEB, "7.0.0") is first
    clock.now += 5  # the 304 made it fresh again
    assert await client.manifest(WEB, "7.0.0") is first
    assert [(s.path, s.if_none_match) for s in registry.seen] == [
        (MANIFEST, None), (MANIFEST, '"idx-1"')]
    assert await client.manifest(WEB, IMAGE.digest) is first  # by digest: from the cache
    assert len(registry.seen) == 2


async def test_a_manifest_that_does_not_match_its_digest(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    registry.routes = {f"/v2/acme/web/manifests/{IMAGE.digest}": fixed(
        200, INDEX + b" ", **{"Content-Type": OCI_INDEX})}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).manifest(WEB, IMAGE.digest)
    assert str(failed.value).startswith("registry registry.test sent ")
    assert str(failed.value).endswith(" for acme/web")


async def test_labels_are_read_once_and_checked_against_their_digest(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    blob = f"/v2/acme/web/blobs/{CONFIG_DIGEST}"
    registry.routes = {blob: fixed(200, CONFIG)}
    client = make_client(session, registry)
    labels = await client.labels(WEB, CONFIG_DIGEST)
    assert labels == {"org.opencontainers.image.revision": "c" * 40}
    assert await client.labels(WEB, CONFIG_DIGEST) == labels
    assert registry.paths() == [f"GET {blob}"]
    assert await client.labels(WEB, "sha256:" + "0" * 64) == {}  # unknown blob
    registry.routes = {blob: fixed(200, CONFIG + b"\n")}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).labels(WEB, CONFIG_DIGEST)
    assert str(failed.value) == (f"registry registry.test sent a configuration blob that does "
                                 f"not match {CONFIG_DIGEST} for acme/web")


# -- tag lists ---------------------------------------------------------------------------------
async def test_tag_pages_are_conditional_and_a_link_to_another_host_is_not_followed(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    async def tags(request: web.Request) -> web.Response:
        if request.headers.get("If-None-Match") == '"t1"':
            return web.Response(status=304)
        return web.json_response(
            {"name": "acme/web", "tags": ["7.0.0", 7, "6.0.0", "7.0.0"]},
            headers={"ETag": '"t1"',
                     "Link": '<https://elsewhere.test/v2/acme/web/tags/list?last=6>; rel="next"'})

    registry.routes = {TAGS: tags}
    client = make_client(session, registry)
    assert await client.tags(WEB) == ["7.0.0", "6.0.0"]
    assert await client.tags(WEB) == ["7.0.0", "6.0.0"]
    assert [s.if_none_match for s in registry.seen] == [None, '"t1"']


@pytest.mark.parametrize("body", [b"not json", b'{"tags": null}', b"[]"])
async def test_tag_lists_that_are_not_lists(registry: ScriptedRegistry,
                                            session: aiohttp.ClientSession, body: bytes) -> None:
    registry.routes = {TAGS: fixed(200, body)}
    client = make_client(session, registry)
    if body == b"not json":
        with pytest.raises(RegistryError) as failed:
            await client.tags(WEB)
        assert str(failed.value) == ("registry registry.test sent a tag list that is not JSON "
                                     "for acme/web")
    else:
        assert await client.tags(WEB) == []


async def test_the_tag_list_stops_at_the_page_cap(registry: ScriptedRegistry,
                                                  session: aiohttp.ClientSession) -> None:
    async def tags(request: web.Request) -> web.Response:
        page = int(request.query.get("last", "0"))
        return web.json_response({"tags": [f"1.0.{page}"]}, headers={
            "Link": f'</v2/acme/web/tags/list?n=1&last={page + 1}>; rel="next"'})

    registry.routes = {TAGS: tags}
    client = make_client(session, registry, max_tag_pages=3, tags_page_size=1)
    assert await client.tags(WEB) == ["1.0.0", "1.0.1", "1.0.2"]
    assert len(registry.seen) == 3


async def test_an_oversized_tag_list_is_refused(registry: ScriptedRegistry,
                                                session: aiohttp.ClientSession) -> None:
    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()  # chunked: no Content-Length to refuse it by
        await response.prepare(request)
        chunk = b" " * (1024 * 1024)
        for _ in range(MAX_TAGS_PAGE_BYTES // len(chunk) + 1):
            await response.write(chunk)
        await response.write_eof()
        return response

    registry.routes = {TAGS: huge}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).tags(WEB)
    assert str(failed.value) == (f"registry registry.test sent an answer larger than "
                                 f"{MAX_TAGS_PAGE_BYTES:,} bytes for acme/web")


async def test_a_declared_oversized_blob_is_refused_before_reading(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    registry.routes = {f"/v2/acme/web/blobs/{CONFIG_DIGEST}": fixed(200, b"x" * (5 * 1024 * 1024))}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).labels(WEB, CONFIG_DIGEST)
    assert "an answer larger than 4,194,304 bytes" in str(failed.value)


# -- redirects and retries ---------------------------------------------------------------------
async def test_a_redirect_to_blob_storage_drops_the_token(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    blob = f"/v2/acme/web/blobs/{CONFIG_DIGEST}"
    # the same server under another name: a different origin to the client
    storage = registry.url.replace("127.0.0.1", "localhost")

    async def redirect(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Basic Y2k6cHc=":
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="r"'})
        return web.Response(status=307, headers={"Location": f"{storage}/storage/config"})

    registry.routes = {blob: redirect, "/storage/config": fixed(200, CONFIG)}
    client = make_client(session, registry,
                         credentials={"registry.test": Credential("ci", "pw")})
    assert (await client.labels(WEB, CONFIG_DIGEST))["org.opencontainers.image.revision"]
    assert [(s.path, s.authorization) for s in registry.seen] == [
        (blob, None), (blob, "Basic Y2k6cHc="), ("/storage/config", None)]


async def test_a_303_turns_a_token_post_into_a_get(registry: ScriptedRegistry,
                                                   session: aiohttp.ClientSession) -> None:
    registry.routes = {
        MANIFEST: bearer_gate(registry, index(), "t303"),
        "/token": fixed(303, Location="/token/issued"),
        "/token/issued": fixed(200, b'{"token": "t303"}'),
    }
    client = make_client(session, registry,
                         credentials={"registry.test": Credential(identity_token="idt")})
    assert await client.manifest(WEB, "7.0.0") is not None
    assert registry.paths() == [f"GET {MANIFEST}", "POST /token", "GET /token/issued",
                                f"GET {MANIFEST}"]


async def test_a_redirect_loop_ends(registry: ScriptedRegistry,
                                    session: aiohttp.ClientSession) -> None:
    registry.routes = {MANIFEST: fixed(302, Location=MANIFEST)}
    with pytest.raises(RegistryError) as failed:
        await make_client(session, registry).manifest(WEB, "7.0.0")
    assert str(failed.value) == "registry registry.test sent too many redirects for acme/web"
    assert len(registry.seen) == 4


async def test_5xx_and_429_are_retried_honouring_retry_after(
        registry: ScriptedRegistry, session: aiohttp.ClientSession) -> None:
    answers = [fixed(503, **{"Retry-After": "2"}), fixed(429, **{"Retry-After": "soon"}),
               fixed(502, **{"Retry-After": "999"}), index()]

    async def flaky(request: web.Request) -> web.StreamResponse:
        return await answers.pop(0)(request)

    registry.routes = {MANIFEST: flaky}
    slept: list[float] = []
    client = make_client(session, registry, slept=slept, attempts=4, base_delay=0.5,
                         max_retry_after=30)
    assert await client.manifest(WEB, "7.0.0") is not None
    assert slept == [2.0, 1.0, 30.0] and client.requests == 4


async def test_retries_run_out_with_the_last_refusal(registry: ScriptedRegistry,
                                                     session: aiohttp.ClientSession) -> None:
    registry.routes = {MANIFEST: fixed(500)}
    slept: list[float] = []
    client = make_client(session, registry, slept=slept, attempts=3, base_delay=1, max_delay=1.5)
    with pytest.raises(RegistryError) as failed:
        await client.manifest(WEB, "7.0.0")
    assert str(failed.value) == ("registry registry.test answered 500 for acme/web: retried "
                                 "later by the resync")
    assert slept == [1.0, 1.5] and len(registry.seen) == 3


async def test_an_unreachable_registry(session: aiohttp.ClientSession) -> None:
    client = RegistryClient(lambda: session, endpoints={"registry.test": "http://127.0.0.1:9"},
                            policy=RegistryPolicy(attempts=2, base_delay=0),
                            sleep=lambda seconds: _no_wait())
    with pytest.raises(RegistryError) as failed:
        await client.tags(WEB)
    assert str(failed.value) == ("registry registry.test could not be reached "
                                 "(ClientConnectorError) for acme/web: check the network or "
                                 "CONVEYOR_REGISTRY_ENDPOINTS")
    assert client.requests == 2


async def _no_wait() -> None:
    return None
