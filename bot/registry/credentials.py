"""Registry credentials from a Docker `config.json` (what a Kubernetes pull secret mounts).

Only `auths` is read: `auth` (base64 `user:password`), `username`/`password`, and
`identitytoken` (an OAuth2 refresh token for the registry's token service). Credential helpers
(`credHelpers`, `credsStore`) run programs and are not supported. No error text ever carries a
secret from the file.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.registry.names import host_key

log = logging.getLogger(__name__)

MAX_AUTH_FILE_BYTES = 1024 * 1024


class AuthFileError(ValueError):
    """The auth file cannot be used; the message names the entry, never its secret."""


@dataclass(frozen=True)
class Credential:
    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)
    identity_token: str = field(default="", repr=False)

    @property
    def basic(self) -> str | None:
        """The `Authorization: Basic` value, when a username and password are known."""
        if not self.username or not self.password:
            return None
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode()


def parse_auths(data: Any) -> dict[str, Credential]:
    """{canonical host: credential} from a decoded Docker config."""
    if not isinstance(data, dict):
        raise AuthFileError("expected a JSON object with an `auths` object")
    auths = data.get("auths", {})
    if not isinstance(auths, dict):
        raise AuthFileError("`auths` must be an object of registry hosts")
    found: dict[str, Credential] = {}
    for key, entry in auths.items():
        if not isinstance(entry, dict):
            raise AuthFileError(f"auths[{key!r}] must be an object")
        username = _text(entry, key, "username")
        password = _text(entry, key, "password")
        encoded = _text(entry, key, "auth")
        if encoded:
            try:
                decoded = base64.b64decode(encoded, validate=True).decode()
            except ValueError:  # also a text that is not ASCII
                raise AuthFileError(f"auths[{key!r}].auth is not base64 of user:password") \
                    from None
            user, sep, secret = decoded.partition(":")
            if not sep:
                raise AuthFileError(f"auths[{key!r}].auth is not base64 of user:password")
            username, password = username or user, password or secret
        credential = Credential(username, password, _text(entry, key, "identitytoken"))
        if credential.basic or credential.identity_token:
            found[host_key(str(key))] = credential
    return found


def _text(entry: dict[str, Any], key: str, name: str) -> str:
    value = entry.get(name, "")
    if not isinstance(value, str):
        raise AuthFileError(f"auths[{key!r}].{name} must be a string")
    return value


def load_auth_file(path: Path) -> dict[str, Credential]:
    try:
        raw = path.read_bytes()[: MAX_AUTH_FILE_BYTES + 1]
    except OSError as exc:
        raise AuthFileError(f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_AUTH_FILE_BYTES:
        raise AuthFileError("is larger than 1 MB")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise AuthFileError("is not JSON (expected a Docker config.json)") from None
    return parse_auths(data)


# How often the auth file is looked at (a stat, no read) for a change.
CHECK_EVERY = 5.0


class AuthFile:
    """The credentials of an auth file that may change while the server runs: a mounted pull
    secret that the kubelet updates, an ECR token refreshed every 12 hours. The file is looked
    at no more than every ``check_every`` seconds and read again when its modification time,
    size or inode changed; a file that stops being readable or valid keeps the credentials
    read last, with a warning in the log (never their content)."""

    def __init__(self, path: Path, credentials: Mapping[str, Credential], *,
                 clock: Callable[[], float] = time.monotonic,
                 check_every: float = CHECK_EVERY) -> None:
        self.path = path
        self._credentials = dict(credentials)
        self._clock = clock
        self._check_every = check_every
        self._checked = clock()
        self._seen = self._identity()

    def current(self) -> Mapping[str, Credential]:
        now = self._clock()
        if now - self._checked >= self._check_every:
            self._checked = now
            seen = self._identity()
            if seen != self._seen:
                self._seen = seen
                self._reload()
        return self._credentials

    def _identity(self) -> tuple[int, int, int] | None:
        try:
            found = self.path.stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size, found.st_ino

    def _reload(self) -> None:
        try:
            self._credentials = load_auth_file(self.path)
        except AuthFileError as exc:
            log.warning("the registry auth file changed and cannot be used; keeping the "
                        "credentials read before", extra={"path": str(self.path),
                                                          "error": str(exc)})
            return
        log.info("registry credentials read again", extra={
            "path": str(self.path), "hosts": sorted(self._credentials)})
