"""Settings from the environment and an optional `.env` file (the environment wins)."""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bot.attestations.trustfile import SETTING as SIGSTORE_TRUST_SETTING
from bot.attestations.trustfile import RootError, TrustFile, read_trust_text
from bot.domain.write_budget import GITHUB_COM_BUDGET, WriteBudget, parse_content_limits
from bot.registry.credentials import AuthFileError, Credential, load_auth_file
from bot.registry.names import parse_endpoints
from bot.render.tool import (
    HELM_SETTING,
    KUSTOMIZE_SETTING,
    Helm,
    Kustomize,
    find_helm,
    find_kustomize,
)

DEFAULT_API_URL = "https://api.github.com"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# GitHub answers at most 100 concurrent requests of one app (its secondary rate limit):
# more workers would only wait for one another.
MAX_WORKERS = 100
# The PEM of a 16384-bit RSA key (the largest OpenSSL makes) is about 12,600 characters.
MAX_KEY_FILE_CHARS = 64 * 1024


class SettingsError(Exception):
    """A missing or malformed setting; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    app_id: str
    private_key: str = field(repr=False)
    webhook_secret: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    host: str = "0.0.0.0"
    port: int = 3000
    log_level: str = "INFO"
    resync_interval: float = 600.0
    max_body_bytes: int = 25 * 1024 * 1024
    queue_size: int = 10_000
    workers: int = 8
    shutdown_grace: float = 25.0
    # Scale-out: empty keeps everything in process memory (one replica, or independent ones).
    redis_url: str = field(default="", repr=False)
    redis_claim_timeout: float = 30.0
    # Registries: credentials by host (from CONVEYOR_REGISTRY_AUTH_FILE) and endpoint overrides.
    registry_credentials: Mapping[str, Credential] = field(default_factory=dict, repr=False)
    registry_auth_file: Path | None = None  # where they came from: read again when it changes
    registry_endpoints: Mapping[str, str] = field(default_factory=dict)
    # GitHub's content-creation limits the writes are paced within (CONVEYOR_CONTENT_LIMITS);
    # None: a server without them (`off`).
    content_limits: WriteBudget | None = GITHUB_COM_BUDGET
    # The kustomize that builds overlays (CONVEYOR_KUSTOMIZE); None: rendering is off.
    kustomize: Kustomize | None = field(default_factory=lambda: find_kustomize(None))
    # The Sigstore roots attestations are verified against (CONVEYOR_SIGSTORE_TRUST); None:
    # Sigstore's public-good root and GitHub's, through their TUF repositories.
    sigstore_trust: TrustFile | None = field(default=None, repr=False)
    # The Helm that renders charts (CONVEYOR_HELM); None: chart rendering is off.
    helm: Helm | None = field(default_factory=lambda: find_helm(None))


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a `.env` file: KEY=VALUE lines, `#` comments, optional quotes, `export ` prefix.

    Double-quoted values may span lines (a PEM key pasted as is) and understand `\\n`.
    """
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: cannot be read: not UTF-8 text") from None
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise SettingsError(f"{path}: line {index}: expected KEY=VALUE")
        value = value.strip()
        if value.startswith('"'):
            body = value[1:]
            while not _closes_double_quote(body) and index < len(lines):
                body += "\n" + lines[index]
                index += 1
            if not _closes_double_quote(body):
                raise SettingsError(f"{path}: {key}: unterminated double quote")
            value = body.rstrip()[:-1].replace("\\n", "\n").replace('\\"', '"')
        elif value.startswith("'") and value.endswith("'") and len(value) >= 2:
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        values[key] = value
    return values


def _closes_double_quote(body: str) -> bool:
    stripped = body.rstrip()
    return stripped.endswith('"') and not stripped.endswith('\\"')


def merged_environment(
    environ: Mapping[str, str] | None = None, dotenv: Path | None = None
) -> dict[str, str]:
    values = read_dotenv(dotenv if dotenv is not None else Path.cwd() / ".env")
    values.update(os.environ if environ is None else environ)
    return values


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise SettingsError(f"{name} is not set")
    return value


def _number(env: Mapping[str, str], name: str, default: float, *, integer: bool = False) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise SettingsError(f"{name} must be a finite number, got {raw!r}")
    if value < 0:
        raise SettingsError(f"{name} must not be negative, got {raw!r}")
    return value


def _private_key(env: Mapping[str, str]) -> str:
    inline = env.get("GITHUB_PRIVATE_KEY", "").strip()
    key_path = env.get("GITHUB_PRIVATE_KEY_PATH", "").strip()
    if inline:
        key, name = inline.replace("\\n", "\n"), "GITHUB_PRIVATE_KEY"
    elif key_path:
        key, name = _key_file_text(key_path), "GITHUB_PRIVATE_KEY_PATH"
    else:
        raise SettingsError("GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH is not set")
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        loaded = load_pem_private_key(key.strip().encode(), password=None)
    except TypeError:  # what cryptography raises for an encrypted key read without a password
        raise SettingsError(f"{name} is an encrypted private key: Conveyor needs the "
                            "unencrypted key GitHub gives (decrypt it with `openssl pkey`, or "
                            "download a new one from the app's settings)") from None
    except (ValueError, UnsupportedAlgorithm):
        raise SettingsError(f"{name} is not a PEM private key") from None
    if not isinstance(loaded, RSAPrivateKey):
        # GitHub App keys are RSA: GitHub signs app JWTs with RS256 only
        raise SettingsError(f"{name} is not an RSA private key (GitHub App keys are RSA; "
                            "download a new one from the app's settings)")
    return key.strip() + "\n"


def _key_file_text(key_path: str) -> str:
    """The text of the file `GITHUB_PRIVATE_KEY_PATH` names: a regular file (a FIFO would wait
    for a writer, a device such as /dev/zero never ends), read up to MAX_KEY_FILE_CHARS."""
    path = Path(key_path).expanduser()
    try:
        if path.exists() and not path.is_file():
            raise SettingsError(f"GITHUB_PRIVATE_KEY_PATH cannot be read: {key_path} is not a "
                                "regular file")
        with path.open(encoding="utf-8") as handle:
            key = handle.read(MAX_KEY_FILE_CHARS + 1)
    except OSError as exc:
        raise SettingsError(
            f"GITHUB_PRIVATE_KEY_PATH cannot be read: {exc.strerror or exc}"
        ) from None
    except UnicodeDecodeError:
        raise SettingsError("GITHUB_PRIVATE_KEY_PATH is not a PEM private key "
                            "(not UTF-8 text)") from None
    if len(key) > MAX_KEY_FILE_CHARS:
        raise SettingsError("GITHUB_PRIVATE_KEY_PATH is not a PEM private key "
                            f"(longer than {MAX_KEY_FILE_CHARS} characters)")
    return key


def checked_api_url(url: str, name: str) -> str:
    """`url` without its trailing slash; SettingsError naming `name` (the setting or option
    it came from) unless it is an http(s) URL with a host, a valid port and no query."""
    return checked_http_url(url, name, query=False).rstrip("/")


def checked_http_url(url: str, name: str, *, query: bool = True) -> str:
    """`url` as it is; SettingsError naming `name` unless it is an http(s) URL with a host and
    a valid port (and, where `query` is False, no query)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise SettingsError(f"{name} must be an http(s) URL, got {url!r}") from None
    if (parts.scheme not in ("http", "https") or not parts.hostname or port == 0
            or (parts.query and not query)):
        raise SettingsError(f"{name} must be an http(s) URL, got {url!r}")
    return url


def _redis_url(env: Mapping[str, str]) -> str:
    url = env.get("CONVEYOR_REDIS_URL", "").strip()
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise SettingsError("CONVEYOR_REDIS_URL must be a redis:// or rediss:// URL") from None
    path = parts.path.strip("/")
    if (parts.scheme not in ("redis", "rediss") or not parts.hostname or port == 0
            or (path and not path.isdigit())):
        # The URL may hold a password: never echo it.
        raise SettingsError("CONVEYOR_REDIS_URL must be a redis:// or rediss:// URL "
                            "(redis://[:password@]host[:port][/db])")
    if importlib.util.find_spec("redis") is None:
        raise SettingsError("CONVEYOR_REDIS_URL is set but the redis client is not installed: "
                            "pip install 'conveyor-bot[redis]'")
    return url


def _registry_credentials(env: Mapping[str, str]) -> dict[str, Credential]:
    path = env.get("CONVEYOR_REGISTRY_AUTH_FILE", "").strip()
    if not path:
        return {}
    try:
        return load_auth_file(Path(path).expanduser())
    except AuthFileError as exc:
        raise SettingsError(f"CONVEYOR_REGISTRY_AUTH_FILE {path}: {exc}") from None


def _registry_auth_file(env: Mapping[str, str]) -> Path | None:
    path = env.get("CONVEYOR_REGISTRY_AUTH_FILE", "").strip()
    return Path(path).expanduser() if path else None


def _registry_endpoints(env: Mapping[str, str]) -> dict[str, str]:
    try:
        return parse_endpoints(env.get("CONVEYOR_REGISTRY_ENDPOINTS", ""))
    except ValueError as exc:
        raise SettingsError(f"CONVEYOR_REGISTRY_ENDPOINTS: {exc}") from None


def _content_limits(env: Mapping[str, str]) -> WriteBudget | None:
    raw = env.get("CONVEYOR_CONTENT_LIMITS", "").strip()
    if not raw:
        return GITHUB_COM_BUDGET
    try:
        return parse_content_limits(raw)
    except ValueError as exc:
        raise SettingsError(f"CONVEYOR_CONTENT_LIMITS {exc}") from None


def _kustomize(env: Mapping[str, str]) -> Kustomize | None:
    try:
        return find_kustomize(env.get(KUSTOMIZE_SETTING))
    except ValueError as exc:
        raise SettingsError(f"{KUSTOMIZE_SETTING}: {exc}") from None


def _sigstore_trust(env: Mapping[str, str], check_roots: bool) -> TrustFile | None:
    path = env.get(SIGSTORE_TRUST_SETTING, "").strip()
    if not path:
        return None
    try:
        trust = read_trust_text(path)
    except RootError as exc:
        raise SettingsError(f"{SIGSTORE_TRUST_SETTING} {exc}") from None
    if check_roots:
        check_trust_roots(trust)
    return trust


def check_trust_roots(trust: TrustFile) -> None:
    """SettingsError when a root of `CONVEYOR_SIGSTORE_TRUST` cannot be used."""
    # imported here: the Sigstore libraries take ~30 MB, which the intake process of
    # `python -m bot serve` does without (its workers process checks the roots at start)
    from bot.attestations.trust import check_roots

    try:
        check_roots(trust)
    except RootError as exc:
        raise SettingsError(f"{SIGSTORE_TRUST_SETTING} {exc}") from None


def _helm(env: Mapping[str, str]) -> Helm | None:
    try:
        return find_helm(env.get(HELM_SETTING))
    except ValueError as exc:
        raise SettingsError(f"{HELM_SETTING}: {exc}") from None


def load_settings(environ: Mapping[str, str] | None = None, dotenv: Path | None = None, *,
                  check_roots: bool = True) -> Settings:
    """Build Settings; raises SettingsError naming the first bad variable. Without
    `check_roots`, the file of `CONVEYOR_SIGSTORE_TRUST` is read but its roots are not checked
    (`check_trust_roots` does)."""
    env = merged_environment(environ, dotenv)
    app_id = _required(env, "GITHUB_APP_ID")
    if not (app_id.isascii() and app_id.isdigit()):
        raise SettingsError(f"GITHUB_APP_ID must be the numeric app id, got {app_id!r}")
    secret = _required(env, "GITHUB_WEBHOOK_SECRET")
    private_key = _private_key(env)
    log_level = (env.get("LOG_LEVEL", "").strip() or "INFO").upper()
    if log_level not in LOG_LEVELS:
        raise SettingsError(f"LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
    port = int(_number(env, "PORT", 3000, integer=True))
    if not 0 < port < 65536:
        raise SettingsError(f"PORT must be between 1 and 65535, got {port}")
    workers = max(1, int(_number(env, "CONVEYOR_WORKERS", 8, integer=True)))
    if workers > MAX_WORKERS:
        raise SettingsError(f"CONVEYOR_WORKERS must be at most {MAX_WORKERS} (GitHub answers "
                            f"at most 100 concurrent requests), got {workers}")
    return Settings(
        app_id=app_id,
        private_key=private_key,
        webhook_secret=secret,
        api_url=checked_api_url(env.get("GITHUB_API_URL", "").strip() or DEFAULT_API_URL,
                                "GITHUB_API_URL"),
        host=env.get("HOST", "").strip() or "0.0.0.0",
        port=port,
        log_level=log_level,
        resync_interval=_number(env, "CONVEYOR_RESYNC_INTERVAL", 600.0),
        max_body_bytes=int(_number(env, "CONVEYOR_MAX_BODY_BYTES", 25 * 1024 * 1024, integer=True)),
        queue_size=max(1, int(_number(env, "CONVEYOR_QUEUE_SIZE", 10_000, integer=True))),
        workers=workers,
        redis_url=_redis_url(env),
        redis_claim_timeout=max(0.5, _number(env, "CONVEYOR_REDIS_CLAIM_TIMEOUT", 30.0)),
        registry_credentials=_registry_credentials(env),
        registry_auth_file=_registry_auth_file(env),
        registry_endpoints=_registry_endpoints(env),
        content_limits=_content_limits(env),
        kustomize=_kustomize(env),
        sigstore_trust=_sigstore_trust(env, check_roots),
        helm=_helm(env),
    )
