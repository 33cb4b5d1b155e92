"""The GitHub edge: one gidgethub client per installation over one shared aiohttp session.

Adds what a production app needs on top of gidgethub: a conditional-request (ETag) cache per
installation; one rate-limit state per installation that every request awaits (`ratelimit`):
waits GitHub asks for, and mutating requests serialised and paced within the content-creation
budget; retries for rate limits, 5xx and timeouts with capped exponential backoff.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import cachetools
import gidgethub
from gidgethub import aiohttp as gh_aiohttp
from gidgethub.abc import GitHubAPI

from bot.caches import SizedLRU, deep_size
from bot.github.auth import AppAuth
from bot.github.immutable import ShaStore
from bot.github.limits import TextTooLong, over_limit
from bot.github.ratelimit import APP, BARE_SECONDARY_WAIT, RateLimiter
from bot.github.transient import TransientError, retry_request
from bot.metrics import Metrics

log = logging.getLogger(__name__)

USER_AGENT = "conveyor-bot"
_MUTATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    # Never sleep longer than this for one rate-limit wait; beyond it the job fails and the
    # resync picks the work up later.
    max_rate_limit_wait: float = 900.0
    request_timeout: float = 30.0

    def backoff(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


class ConveyorGitHubAPI(gh_aiohttp.GitHubAPI):
    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        installation_id: int | None,
        mutation_lock: asyncio.Lock,
        limits: RateLimiter,
        metrics: Metrics | None,
        retry: RetryPolicy,
        app_jwt: Callable[[], str] | None = None,
        shas: ShaStore | None = None,
        yield_to: Callable[[], Awaitable[None]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(session, USER_AGENT, **kwargs)
        self._yield_to = yield_to
        self._app_jwt_source = app_jwt
        self.shas = shas
        self.installation_id = installation_id
        # whose waits this client keeps: its installation's, or the app's own
        self._limit_key = APP if installation_id is None else installation_id
        self._mutation_lock = mutation_lock
        self._limits = limits
        self._metrics = metrics
        self._retry = retry

    def _get_app_jwt(self) -> str | None:
        """The app's JWT from the shared, cached signer (gidgethub would sign anew per client)."""
        if self._app_jwt_source is not None:
            return self._app_jwt_source()
        return super()._get_app_jwt()

    async def _make_request(self, method: str, url: str, url_vars: Any, data: Any,
                            accept: str, *args: Any, **kwargs: Any) -> Any:
        problem = over_limit(data)
        if problem is not None:
            log.error("request not sent: over GitHub's size limit",
                      extra={"method": method, "path": _path(url), "error": problem})
            raise TextTooLong(f"{method} {_path(url)}: {problem}")
        return await super()._make_request(method, url, url_vars, data, accept, *args, **kwargs)

    async def sleep(self, seconds: float) -> None:
        await self._limits.timer.sleep(seconds)

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        if self._yield_to is not None:
            await self._yield_to()
        attempt = 0
        while True:
            attempt += 1
            try:
                # A GraphQL query is a POST that writes nothing (the bot sends no mutations):
                # it is not paced as content creation.
                if method in _MUTATING and not _path(url).endswith("/graphql"):
                    async with self._mutation_lock:
                        await self._wait_turn(write=True)
                        result = await self._send(method, url, headers, body)
                else:
                    await self._wait_turn(write=False)
                    result = await self._send(method, url, headers, body)
            except (TimeoutError, aiohttp.ClientError) as exc:
                self._count(method, "error")
                if attempt >= self._retry.attempts:
                    reason = type(exc).__name__
                    raise TransientError(f"{method} {_path(url)} failed: {reason}") from None
                delay = self._retry.backoff(attempt)
                log.warning(
                    "github request failed, retrying",
                    extra={"method": method, "path": _path(url), "error": type(exc).__name__,
                           "attempt": attempt, "delay": round(delay, 2)},
                )
                await self.sleep(delay)
                continue
            self._count(method, str(result[0]))
            await self._learn_wait(method, url, *result)
            return result

    async def _wait_turn(self, *, write: bool) -> None:
        # The app's own writes (minting a token) create no content: waited for, not paced.
        await self._limits.before(self._limit_key,
                                  write=write and self.installation_id is not None)

    async def _learn_wait(self, method: str, url: str, status: int,
                          headers: Mapping[str, str], body: bytes) -> None:
        """An answer that asks to wait holds every request of the installation (of the app,
        for the app's own requests)."""
        wait = wait_asked(status, headers, body, self._limits.timer.now())
        if wait is None:
            return
        log.warning("github asks to wait; holding every request of the installation",
                    extra={"method": method, "path": _path(url), "status": status,
                           "installation": self.installation_id, "seconds": round(wait, 1)})
        await self._limits.hold(self._limit_key, wait)

    async def _send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        timeout = aiohttp.ClientTimeout(total=self._retry.request_timeout)
        async with self._session.request(
            method, url, headers=headers, data=body, timeout=timeout
        ) as response:
            return response.status, response.headers, await response.read()

    def _count(self, method: str, status: str) -> None:
        if self._metrics is not None:
            self._metrics.github_requests.labels(method, status).inc()

    async def handle_rate_limit_error(
        self, *, method: str, url: str, exception: gidgethub.HTTPException, attempt: int
    ) -> bool:
        if self._metrics is not None and self.rate_limit is not None and self.installation_id:
            self._metrics.rate_limit_remaining.labels(str(self.installation_id)).set(
                self.rate_limit.remaining
            )
        if attempt >= self._retry.attempts:
            return False
        status = int(exception.status_code)
        headers = getattr(exception, "headers", None) or {}
        if status in (403, 429):
            message = str(exception.args[0]) if exception.args else ""
            wait = wait_asked(status, headers, message.encode(), self._limits.timer.now())
            # The wait itself happens before the next attempt, in `_wait_turn`, for every
            # request of the installation at once.
            return wait is not None and wait <= self._retry.max_rate_limit_wait
        message = str(exception)
        if status not in (500, 502, 503, 504) and not retry_request(method, _path(url), status,
                                                                    message):
            return False
        delay = self._retry.backoff(attempt)
        log.warning(
            "github answered %s, retrying",
            status,
            extra={"method": method, "path": _path(url), "attempt": attempt,
                   "delay": round(delay, 2), "error": message[:200]},
        )
        await self.sleep(delay)
        return True


def wait_asked(status: int, headers: Mapping[str, str], body: bytes, now: float
               ) -> float | None:
    """Seconds GitHub asks the client to wait before its next request, or None.

    GitHub ("Rate limits for the REST API"): honour `retry-after`; with
    `x-ratelimit-remaining: 0` wait until `x-ratelimit-reset`; a secondary-limit 403/429 with
    neither waits at least one minute. A 403 that names no limit is a permission error. The
    REST budget (`x-ratelimit-resource: core`) is the only one every request draws on: a spent
    GraphQL budget holds nothing (its one query falls back to REST).
    """
    remaining = headers.get("x-ratelimit-remaining")
    until_reset: float | None = None
    if remaining == "0" and headers.get("x-ratelimit-resource", "core") == "core":
        try:
            until_reset = max(0.0, float(headers["x-ratelimit-reset"]) - now) + 1
        except (KeyError, ValueError):
            until_reset = BARE_SECONDARY_WAIT
    if status not in (403, 429):
        return until_reset  # the request was served but the limit is spent
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            return BARE_SECONDARY_WAIT
    if until_reset is not None:
        return until_reset
    if status == 429 or b"secondary rate limit" in body.lower():
        return BARE_SECONDARY_WAIT
    return None


def _path(url: str) -> str:
    return url.split("?", 1)[0]


def sha_store(gh: GitHubAPI) -> ShaStore:
    """The app's store of what commit shas address, shared by its installation clients; a
    client made elsewhere gets an empty one each time (it keeps nothing)."""
    if isinstance(gh, ConveyorGitHubAPI) and gh.shas is not None:
        return gh.shas
    return ShaStore()


ETAG_BYTES_KEPT = 64 * 1024 * 1024  # an installation's answers kept for conditional reads


class GrowableCache(MutableMapping[str, Any]):
    """An LRU whose size can grow while clients hold it (gidgethub keeps the mapping it was
    given): the ETag cache of an installation, sized once its policies are known, and within
    `ETAG_BYTES_KEPT` of parsed answers whatever their number."""

    def __init__(self, maxsize: int) -> None:
        self._entries: SizedLRU[str, Any] = SizedLRU(
            max_bytes=ETAG_BYTES_KEPT, max_entries=maxsize, sizeof=deep_size)

    def grow(self, maxsize: int) -> None:
        self._entries.max_entries = max(self._entries.max_entries, maxsize)

    def __getitem__(self, key: str) -> Any:
        return self._entries[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._entries[key] = value

    def __delitem__(self, key: str) -> None:
        del self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class GitHubClients:
    """Owns the shared HTTP session, the app auth and the per-installation caches."""

    def __init__(
        self,
        *,
        api_url: str,
        app_id: str,
        private_key: str,
        metrics: Metrics | None = None,
        retry: RetryPolicy | None = None,
        limits: RateLimiter | None = None,
        etag_cache_entries: int = 2000,
        yield_to: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.api_url = api_url
        self.metrics = metrics
        self.retry = retry or RetryPolicy()
        self.limits = limits or RateLimiter(metrics=metrics,
                                            max_wait=self.retry.max_rate_limit_wait)
        self._session: aiohttp.ClientSession | None = None
        self._etag_cache_entries = etag_cache_entries
        self._caches: cachetools.LRUCache[int, GrowableCache] = cachetools.LRUCache(
            maxsize=1024)
        # App-level reads (installations, hook deliveries) are conditional too.
        self._app_cache: cachetools.LRUCache[str, Any] = cachetools.LRUCache(maxsize=64)
        self._mutation_locks: dict[int | None, asyncio.Lock] = {}
        self.shas = ShaStore()
        self.auth = AppAuth(app_id, private_key, self._request_installation_token)
        # Awaited before each request: the server lets background work wait while webhook
        # deliveries keep arriving (each step of a job between two requests runs on the loop
        # that answers them).
        self.yield_to = yield_to

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=64, limit_per_host=32)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _client(self, installation_id: int | None, **kwargs: Any) -> ConveyorGitHubAPI:
        lock = self._mutation_locks.setdefault(installation_id, asyncio.Lock())
        return ConveyorGitHubAPI(
            self.session,
            installation_id=installation_id,
            mutation_lock=lock,
            limits=self.limits,
            metrics=self.metrics,
            retry=self.retry,
            base_url=self.api_url,
            yield_to=self.yield_to,
            **kwargs,
        )

    def app(self) -> ConveyorGitHubAPI:
        """A client authenticated as the app itself (JWT), for /app endpoints."""
        return self._client(None, app_jwt=self.auth.jwt, cache=self._app_cache)

    def ensure_etag_capacity(self, installation_id: int, entries: int) -> None:
        """Let the installation's ETag cache hold at least `entries` (sized from the policies
        it serves: a cache smaller than one resync's reads turns every read into a full one)."""
        cache = self._caches.get(installation_id)
        if cache is None:
            cache = GrowableCache(max(entries, self._etag_cache_entries))
            self._caches[installation_id] = cache
        cache.grow(entries)

    async def installation(
        self, installation_id: int, *, repositories: tuple[str, ...] = ()
    ) -> ConveyorGitHubAPI:
        token = await self.auth.installation_token(installation_id, repositories=repositories)
        cache = self._caches.get(installation_id)
        if cache is None:
            cache = GrowableCache(self._etag_cache_entries)
            self._caches[installation_id] = cache
        return self._client(installation_id, oauth_token=token, cache=cache, shas=self.shas)

    async def _request_installation_token(
        self, installation_id: int, app_jwt: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        gh = self._client(None)
        result: dict[str, Any] = await gh.post(
            "/app/installations/{installation_id}/access_tokens",
            {"installation_id": installation_id},
            data=body,
            jwt=app_jwt,
        )
        return result
