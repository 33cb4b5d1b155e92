"""Registry credentials from a Docker `config.json` (what a Kubernetes pull secret mounts).

Only `auths` is read: `auth` (base64 `user:password`), `username`/`password`, and
`identitytoken` (an OAuth2 refresh token for the registry's token service). Credential helpers
(`credHelpers`, `credsStore`) run programs and are not supported. No error text ever carries a
secret from the file.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .names import host_key

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
            except (binascii.Error, UnicodeDecodeError):
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
    except (ValueError, UnicodeDecodeError):
        raise AuthFileError("is not JSON (expected a Docker config.json)") from None
    return parse_auths(data)
