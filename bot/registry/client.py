"""An OCI Distribution API client on the shared aiohttp session.

One client serves every registry: it answers each `WWW-Authenticate` challenge (a `Bearer`
token, anonymous or with the auth file's credentials, scoped `repository:<name>:pull`, cached
until it expires; or `Basic`), retries 429/5xx with backoff (honouring `Retry-After`), bounds
every answer, and caches manifests by digest (immutable) and conditionally by tag (ETag).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urljoin, urlsplit

import aiohttp
import cachetools
from multidict import CIMultiDict

from bot.domain.images import is_digest
from bot.registry.challenge import Challenge, parse_challenge
from bot.registry.credentials import AuthFile, Credential
from bot.registry.errors import invalid, refusal, unreachable
from bot.registry.manifests import (
    ACCEPT,
    MAX_MANIFEST_BYTES,
    Manifest,
    ManifestError,
    config_labels,
    next_link,
    parse_manifest,
    sha256_digest,
)
from bot.registry.names import Repository, endpoint_for

log = logging.getLogger(__name__)

USER_AGENT = "conveyor-bot (OCI distribution client)"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_TAGS_PAGE_BYTES = 4 * 1024 * 1024
MAX_TOKEN_BYTES = 256 * 1024
MAX_REDIRECTS = 3
# Docker's token specification: a token without `expires_in` lives 60 seconds.
DEFAULT_TOKEN_SECONDS = 60.0
TOKEN_MARGIN = 10.0
# A tag moves rarely; one resolved this recently is not asked again (the gate may resolve the
# same tags several times in one evaluation).
TAG_FRESH_SECONDS = 15.0


@dataclass(frozen=True)
class RegistryPolicy:
    timeout: float = 10.0
    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    tags_page_size: int = 1000
    max_tag_pages: int = 20


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes


class RegistryClient:
    def __init__(self, session: Callable[[], aiohttp.ClientSession], *,
                 credentials: Mapping[str, Credential] | AuthFile | None = None,
                 endpoints: Mapping[str, str] | None = None,
                 policy: RegistryPolicy | None = None,
                 on_request: Callable[[str, int | None], None] | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._session = session
        if isinstance(credentials, AuthFile):
            self._credentials_now: Callable[[], Mapping[str, Credential]] = credentials.current
        else:
            fixed = dict(credentials or {})
            self._credentials_now = lambda: fixed
        self._endpoints = dict(endpoints or {})
        self.policy = policy or RegistryPolicy()
        self._on_request = on_request
        self._sleep = sleep
        self._clock = clock
        self.requests = 0
        self._tokens: cachetools.LRUCache[tuple[str, str], tuple[str, float]] = (
            cachetools.LRUCache(maxsize=1024))
        self._basic_hosts: set[str] = set()
        self._manifests: cachetools.LRUCache[tuple[str, str, str], Manifest] = (
            cachetools.LRUCache(maxsize=4096))
        # tag → (ETag, digest, when resolved): fresh for TAG_FRESH_SECONDS, then conditional
        self._by_tag: cachetools.LRUCache[tuple[str, str, str], tuple[str, str, float]] = (
            cachetools.LRUCache(maxsize=4096))
        self._labels: cachetools.LRUCache[tuple[str, str, str], dict[str, str]] = (
            cachetools.LRUCache(maxsize=1024))
        self._pages: cachetools.LRUCache[str, tuple[str, list[str], str | None]] = (
            cachetools.LRUCache(maxsize=256))

    def endpoint(self, repository: Repository) -> str:
        return endpoint_for(repository.host, self._endpoints)

    def has_credential(self, host: str) -> bool:
        return host in self._credentials_now()

    # -- the API ---------------------------------------------------------------------------------
    async def manifest(self, repository: Repository, reference: str, *,
                       revalidate: bool = False) -> Manifest | None:
        """The manifest or index a tag or digest names; None when the registry has none.
        ``revalidate``: ask the registry about a tag even when its last answer is fresh (a
        conditional request: a tag pushed again is seen at once)."""
        base = self.endpoint(repository)
        if is_digest(reference):
            cached = self._manifests.get((base, repository.name, reference))
            if cached is not None:
                return cached
        headers = {"Accept": ACCEPT}
        tag_key = (base, repository.name, reference)
        known = None if is_digest(reference) else self._by_tag.get(tag_key)
        if known is not None and (base, repository.name, known[1]) in self._manifests:
            if self._clock() - known[2] < TAG_FRESH_SECONDS and not revalidate:
                return self._manifests[(base, repository.name, known[1])]
            headers["If-None-Match"] = known[0]
        answer = await self._get(repository, f"{base}/v2/{repository.name}/manifests/{reference}",
                                 headers, MAX_MANIFEST_BYTES)
        if answer.status == 304 and known is not None:
            self._by_tag[tag_key] = (known[0], known[1], self._clock())
            return self._manifests[(base, repository.name, known[1])]
        if answer.status == 404:
            return None
        self._raise_for(repository, answer)
        try:
            manifest = parse_manifest(
                answer.body, answer.headers.get("Content-Type", ""),
                answer.headers.get("Docker-Content-Digest"),
                reference if is_digest(reference) else None)
        except ManifestError as exc:
            raise invalid(repository, str(exc)) from None
        self._manifests[(base, repository.name, manifest.digest)] = manifest
        etag = answer.headers.get("ETag")
        if etag and not is_digest(reference):
            self._by_tag[tag_key] = (etag, manifest.digest, self._clock())
        return manifest

    async def tags(self, repository: Repository) -> list[str]:
        """Every tag of a repository (up to the page cap); [] when the repository is unknown."""
        base = self.endpoint(repository)
        url: str | None = (f"{base}/v2/{repository.name}/tags/list?"
                           + urlencode({"n": self.policy.tags_page_size}))
        found: list[str] = []
        pages = 0
        while url is not None:
            if pages >= self.policy.max_tag_pages:
                log.warning("tag list truncated at the page cap",
                            extra={"image": str(repository), "pages": pages})
                break
            pages += 1
            page_tags, url = await self._tags_page(repository, base, url)
            if page_tags is None:
                return found
            found.extend(page_tags)
        return list(dict.fromkeys(found))

    async def labels(self, repository: Repository, config_digest: str) -> dict[str, str]:
        """The OCI labels of an image configuration blob."""
        base = self.endpoint(repository)
        key = (base, repository.name, config_digest)
        if key in self._labels:
            return self._labels[key]
        answer = await self._get(repository, f"{base}/v2/{repository.name}/blobs/{config_digest}",
                                 {}, MAX_CONFIG_BYTES)
        if answer.status == 404:
            return {}
        self._raise_for(repository, answer)
        if sha256_digest(answer.body) != config_digest:
            raise invalid(repository, f"a configuration blob that does not match {config_digest}")
        labels = config_labels(answer.body)
        self._labels[key] = labels
        return labels

    # -- plumbing --------------------------------------------------------------------------------
    async def _tags_page(self, repository: Repository, base: str, url: str
                         ) -> tuple[list[str] | None, str | None]:
        headers = {"Accept": "application/json"}
        cached = self._pages.get(url)
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        answer = await self._get(repository, url, headers, MAX_TAGS_PAGE_BYTES)
        if answer.status == 304 and cached is not None:
            return cached[1], cached[2]
        if answer.status == 404:
            return None, None
        self._raise_for(repository, answer)
        try:
            data = json.loads(answer.body)
        except (ValueError, UnicodeDecodeError):
            raise invalid(repository, "a tag list that is not JSON") from None
        raw = data.get("tags") if isinstance(data, dict) else None
        tags = [t for t in raw if isinstance(t, str)] if isinstance(raw, list) else []
        link = next_link(answer.headers.get("Link"))
        following = urljoin(base + "/", link) if link else None
        if following is not None and urlsplit(following).netloc != urlsplit(base).netloc:
            following = None  # a page link never leads to another host
        etag = answer.headers.get("ETag")
        if etag:
            self._pages[url] = (etag, tags, following)
        return tags, following

    def _raise_for(self, repository: Repository, answer: _Answer) -> None:
        if answer.status != 200:
            raise refusal(repository, answer.status,
                          has_credential=self.has_credential(repository.host))

    async def _get(self, repository: Repository, url: str, headers: dict[str, str],
                   cap: int) -> _Answer:
        """GET with the repository's authorisation, answering one challenge if needed."""
        authorization = self._known_authorization(repository)
        answer = await self._send("GET", repository, url, headers, authorization, cap)
        if answer.status != 401:
            return answer
        challenge = parse_challenge(answer.headers.get("WWW-Authenticate", ""))
        if challenge is None:
            return answer
        authorization = await self._authorize(repository, challenge)
        if authorization is None:
            return answer
        return await self._send("GET", repository, url, headers, authorization, cap)

    def _known_authorization(self, repository: Repository) -> str | None:
        token = self._tokens.get((repository.host, repository.name))
        if token is not None and token[1] > self._clock():
            return f"Bearer {token[0]}"
        credential = self._credentials_now().get(repository.host)
        if repository.host in self._basic_hosts and credential is not None:
            return credential.basic
        return None

    async def _authorize(self, repository: Repository, challenge: Challenge) -> str | None:
        credential = self._credentials_now().get(repository.host)
        if challenge.scheme == "basic":
            self._basic_hosts.add(repository.host)
            return credential.basic if credential is not None else None
        if challenge.scheme != "bearer" or not challenge.params.get("realm"):
            return None
        token, lifetime = await self._fetch_token(repository, challenge, credential)
        self._tokens[(repository.host, repository.name)] = (
            token, self._clock() + max(0.0, lifetime - TOKEN_MARGIN))
        return f"Bearer {token}"

    async def _fetch_token(self, repository: Repository, challenge: Challenge,
                           credential: Credential | None) -> tuple[str, float]:
        realm = challenge.params["realm"]
        endpoint = self.endpoint(repository)
        if urlsplit(realm).scheme not in ("http", "https") or (
                urlsplit(realm).scheme == "http" and urlsplit(endpoint).scheme == "https"):
            # credentials are never sent in clear to a realm an https registry names
            raise invalid(repository, "a token realm that is not https")
        scope = challenge.params.get("scope") or f"repository:{repository.name}:pull"
        query = {"scope": scope}
        if challenge.params.get("service"):
            query["service"] = challenge.params["service"]
        if credential is not None and credential.identity_token:
            answer = await self._send("POST", repository, realm, {}, None, MAX_TOKEN_BYTES, form={
                **query, "grant_type": "refresh_token", "client_id": "conveyor",
                "refresh_token": credential.identity_token})
        else:
            separator = "&" if urlsplit(realm).query else "?"
            answer = await self._send("GET", repository, realm + separator + urlencode(query), {},
                                      credential.basic if credential else None, MAX_TOKEN_BYTES)
        self._raise_for(repository, answer)
        try:
            data = json.loads(answer.body)
            token = data.get("token") or data.get("access_token")
            lifetime = float(data.get("expires_in") or DEFAULT_TOKEN_SECONDS)
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
            raise invalid(repository, "a token answer that is not JSON") from None
        if not isinstance(token, str) or not token:
            raise invalid(repository, "a token answer without a token")
        return token, lifetime

    async def _send(self, method: str, repository: Repository, url: str,
                    headers: dict[str, str], authorization: str | None, cap: int, *,
                    form: dict[str, str] | None = None) -> _Answer:
        """One exchange, retried on 429, 5xx, timeouts and connection errors."""
        policy = self.policy
        for attempt in range(1, policy.attempts + 1):
            try:
                answer = await self._exchange(method, repository, url, headers, authorization,
                                              cap, form)
            except TimeoutError:
                failure = unreachable(repository, f"did not answer within {policy.timeout:g}s")
                self._count(repository, None)
            except aiohttp.ClientError as exc:
                failure = unreachable(repository, f"could not be reached ({type(exc).__name__})")
                self._count(repository, None)
            else:
                self._count(repository, answer.status)
                if answer.status != 429 and answer.status < 500:
                    return answer
                failure = refusal(repository, answer.status,
                                  has_credential=self.has_credential(repository.host))
                if attempt < policy.attempts:
                    await self._sleep(self._delay(attempt, answer.headers.get("Retry-After")))
                    continue
                return answer
            if attempt < policy.attempts:
                await self._sleep(self._delay(attempt, None))
        raise failure

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        policy = self.policy
        if retry_after is not None:
            try:
                return min(max(0.0, float(retry_after)), policy.max_retry_after)
            except ValueError:
                pass
        return float(min(policy.base_delay * 2 ** (attempt - 1), policy.max_delay))

    async def _exchange(self, method: str, repository: Repository, url: str,
                        headers: dict[str, str], authorization: str | None, cap: int,
                        form: dict[str, str] | None) -> _Answer:
        sent = {"User-Agent": USER_AGENT, **headers}
        if authorization:
            sent["Authorization"] = authorization
        origin = urlsplit(url).netloc
        timeout = aiohttp.ClientTimeout(total=self.policy.timeout)
        for _ in range(MAX_REDIRECTS + 1):
            async with self._session().request(method, url, headers=sent, data=form,
                                               allow_redirects=False, timeout=timeout) as resp:
                if resp.status in (301, 302, 303, 307, 308) and "Location" in resp.headers:
                    url = urljoin(url, resp.headers["Location"])
                    if urlsplit(url).netloc != origin:
                        # blob storage (S3, GHCR's CDN) must never see the registry's token
                        sent.pop("Authorization", None)
                    if resp.status == 303:
                        method, form = "GET", None
                    continue
                body = await _bounded(resp, cap)
                if body is None:
                    raise invalid(repository, f"an answer larger than {cap:,} bytes")
                return _Answer(resp.status, CIMultiDict(resp.headers), body)
        raise invalid(repository, "too many redirects")

    def _count(self, repository: Repository, status: int | None) -> None:
        self.requests += 1
        if self._on_request is not None:
            self._on_request(repository.host, status)


async def _bounded(resp: aiohttp.ClientResponse, cap: int) -> bytes | None:
    if resp.content_length is not None and resp.content_length > cap:
        return None
    chunks: list[bytes] = []
    total = 0
    async for chunk in resp.content.iter_chunked(64 * 1024):
        total += len(chunk)
        if total > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
