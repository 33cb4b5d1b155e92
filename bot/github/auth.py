"""GitHub App authentication: app JWTs and cached installation access tokens."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import cachetools
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

# Tokens live an hour; refresh this long before GitHub says they expire so that a token never
# runs out in the middle of a job.
REFRESH_MARGIN_SECONDS = 300.0
_JWT_LIFETIME_SECONDS = 540
_CLOCK_SKEW_SECONDS = 60

TokenKey = tuple[int, tuple[str, ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class InstallationToken:
    token: str = field(repr=False)
    refresh_at: float  # time.monotonic() value


def app_jwt(app_id: str, private_key: str | RSAPrivateKey, now: float | None = None) -> str:
    issued = int(now if now is not None else time.time()) - _CLOCK_SKEW_SECONDS
    payload = {"iat": issued, "exp": issued + _JWT_LIFETIME_SECONDS, "iss": app_id}
    return jwt.encode(payload, private_key, algorithm="RS256")


def load_key(private_key: str) -> RSAPrivateKey:
    """Parse the PEM once: parsing costs far more than signing and would block the loop."""
    key = serialization.load_pem_private_key(private_key.encode(), password=None)
    if not isinstance(key, RSAPrivateKey):
        raise ValueError("the GitHub App key must be an RSA private key")
    return key


class AppAuth:
    """Mints the app JWT and caches installation tokens per (installation, scope)."""

    def __init__(
        self,
        app_id: str,
        private_key: str,
        request_token: Callable[[int, str, dict[str, Any]], Awaitable[dict[str, Any]]],
        *,
        max_installations: int = 4096,
    ) -> None:
        self.app_id = app_id
        self._private_key = private_key
        self._signing_key = load_key(private_key)
        self._request_token = request_token
        self._tokens: cachetools.TLRUCache[TokenKey, InstallationToken] = cachetools.TLRUCache(
            maxsize=max_installations,
            ttu=lambda _key, value, _now: value.refresh_at,
            timer=time.monotonic,
        )
        self._locks: dict[TokenKey, asyncio.Lock] = {}
        self._jwt: tuple[str, float] | None = None
        self.tokens_minted = 0

    def jwt(self) -> str:
        now = time.monotonic()
        if self._jwt is None or now >= self._jwt[1]:
            # Regenerated well before its 9-minute lifetime ends.
            self._jwt = (app_jwt(self.app_id, self._signing_key), now + 300)
        return self._jwt[0]

    async def installation_token(
        self,
        installation_id: int,
        *,
        repositories: Sequence[str] = (),
        permissions: dict[str, str] | None = None,
    ) -> str:
        key: TokenKey = (
            installation_id,
            tuple(sorted(repositories)),
            tuple(sorted((permissions or {}).items())),
        )
        cached = self._tokens.get(key)
        if cached is not None:
            return cached.token
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(key)
            if cached is not None:
                return cached.token
            body: dict[str, Any] = {}
            if repositories:
                body["repositories"] = [name.split("/")[-1] for name in repositories]
            if permissions:
                body["permissions"] = dict(permissions)
            response = await self._request_token(installation_id, self.jwt(), body)
            token = _token_from_response(response)
            self._tokens[key] = token
            self.tokens_minted += 1
        self._locks.pop(key, None)
        return token.token

    def forget(self, installation_id: int) -> None:
        """Drop cached tokens of an installation (after a 401, or when it is removed)."""
        for key in [k for k in self._tokens if k[0] == installation_id]:
            self._tokens.pop(key, None)


def _token_from_response(response: dict[str, Any]) -> InstallationToken:
    token = response["token"]
    expires_at = datetime.fromisoformat(str(response["expires_at"]).replace("Z", "+00:00"))
    lifetime = expires_at.timestamp() - time.time()
    refresh_in = max(0.0, lifetime - REFRESH_MARGIN_SECONDS)
    return InstallationToken(token=token, refresh_at=time.monotonic() + refresh_in)
