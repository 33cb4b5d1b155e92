"""Settings from the environment and `.env`: what each variable accepts, and the one-line error
that names the variable otherwise."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.runtime.settings import SettingsError, load_settings, merged_environment, read_dotenv
from tests.botprocess import REPO_ROOT, coverage_env


@pytest.fixture(scope="module")
def pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


@pytest.fixture
def env(pem: str) -> dict[str, str]:
    return {"GITHUB_APP_ID": "12", "GITHUB_WEBHOOK_SECRET": "s3cret", "GITHUB_PRIVATE_KEY": pem}


def dotenv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".env"
    path.write_text(text, encoding="utf-8")
    return path


def test_dotenv_comments_export_and_quotes(tmp_path: Path) -> None:
    path = dotenv(tmp_path, "\n".join([
        "# a comment", "", "export HOST=127.0.0.1", "PORT=8080 # inline comment",
        "SINGLE='kept # as is'", 'DOUBLE="a \\"quoted\\" word"', "EMPTY=",
    ]))
    assert read_dotenv(path) == {"HOST": "127.0.0.1", "PORT": "8080", "SINGLE": "kept # as is",
                                 "DOUBLE": 'a "quoted" word', "EMPTY": ""}


def test_a_double_quoted_value_spans_lines_and_understands_backslash_n(tmp_path: Path) -> None:
    path = dotenv(tmp_path, 'KEY="-----BEGIN-----\nbody\n-----END-----"\nESCAPED="a\\nb"\nNEXT=1\n')
    assert read_dotenv(path) == {"KEY": "-----BEGIN-----\nbody\n-----END-----",
                                 "ESCAPED": "a\nb", "NEXT": "1"}


@pytest.mark.parametrize(("text", "message"), [
    ("JUST A LINE\n", ".env: line 1: expected KEY=VALUE"),
    ("OK=1\n9BAD=2\n", ".env: line 2: expected KEY=VALUE"),
    ('KEY="never closed\nmore\n', ".env: KEY: unterminated double quote"),
])
def test_malformed_dotenv_lines_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        read_dotenv(dotenv(tmp_path, text))
    assert str(raised.value) == f"{tmp_path}/{message}"


def test_a_dotenv_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_bytes(b"GITHUB_APP_ID=1\nX=\xff\n")
    with pytest.raises(SettingsError) as raised:
        merged_environment({}, path)
    assert str(raised.value) == f"{path}: cannot be read: not UTF-8 text"


def test_an_unreadable_dotenv_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = dotenv(tmp_path, "HOST=x\n")

    def denied(_path: Path, *_args: object, **_kwargs: object) -> str:
        # a file of mode 000, as anyone but root meets it (the tests may run as root)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(SettingsError) as raised:
        merged_environment({}, path)
    assert str(raised.value) == f"{path}: cannot be read: Permission denied"


def test_serve_refuses_a_dotenv_that_is_not_utf8_in_one_line(env: dict[str, str],
                                                              tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"X=\xff\n")
    done = subprocess.run(
        [sys.executable, "-m", "bot", "serve"], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT),
                         **coverage_env(), **env})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"conveyor: {tmp_path / '.env'}: cannot be read: not UTF-8 text"]


def test_the_environment_wins_over_dotenv(tmp_path: Path) -> None:
    path = dotenv(tmp_path, "HOST=from-file\nPORT=1\n")
    assert merged_environment({"HOST": "from-env"}, path) == {"HOST": "from-env", "PORT": "1"}
    assert read_dotenv(tmp_path / "missing") == {}


def test_defaults(env: dict[str, str], tmp_path: Path, pem: str) -> None:
    settings = load_settings(env, dotenv=tmp_path / "none")
    assert (settings.app_id, settings.api_url, settings.host, settings.port) == (
        "12", "https://api.github.com", "0.0.0.0", 3000)
    assert (settings.log_level, settings.resync_interval, settings.queue_size,
            settings.workers) == ("INFO", 600.0, 10_000, 8)
    assert settings.private_key == pem.strip() + "\n"
    assert "s3cret" not in repr(settings) and "PRIVATE" not in repr(settings)


def test_numbers_are_read_and_clamped(env: dict[str, str], tmp_path: Path) -> None:
    settings = load_settings({**env, "PORT": "8080", "LOG_LEVEL": "debug",
                              "CONVEYOR_RESYNC_INTERVAL": "2.5", "CONVEYOR_QUEUE_SIZE": "0",
                              "CONVEYOR_WORKERS": "0", "CONVEYOR_MAX_BODY_BYTES": "1024",
                              "GITHUB_API_URL": "http://127.0.0.1:9/api/v3/"},
                             dotenv=tmp_path / "none")
    assert (settings.port, settings.log_level, settings.resync_interval) == (8080, "DEBUG", 2.5)
    assert (settings.queue_size, settings.workers, settings.max_body_bytes) == (1, 1, 1024)
    assert settings.api_url == "http://127.0.0.1:9/api/v3"


@pytest.mark.parametrize(("value", "per_minute", "per_hour"), [
    ("", 80, 500), ("80/min,500/h", 80, 500), (" 500/h , 100/min ", 100, 500),
    ("20/min", 20, None), ("300/h", None, 300),
])
def test_content_limits(env: dict[str, str], tmp_path: Path, value: str,
                        per_minute: int | None, per_hour: int | None) -> None:
    budget = load_settings({**env, "CONVEYOR_CONTENT_LIMITS": value},
                           dotenv=tmp_path / "none").content_limits
    assert budget is not None and (budget.per_minute, budget.per_hour) == (per_minute, per_hour)


def test_content_limits_off_for_a_server_without_them(env: dict[str, str],
                                                      tmp_path: Path) -> None:
    settings = load_settings({**env, "CONVEYOR_CONTENT_LIMITS": "Off"}, dotenv=tmp_path / "none")
    assert settings.content_limits is None


def test_serve_refuses_malformed_content_limits_in_one_line(env: dict[str, str],
                                                           tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "serve"], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT),
                         **coverage_env(), **env, "CONVEYOR_CONTENT_LIMITS": "80 a minute"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "conveyor: CONVEYOR_CONTENT_LIMITS must be `off` or limits like `80/min,500/h`, "
        "got '80 a minute'"]


def test_the_key_is_read_from_a_file(env: dict[str, str], tmp_path: Path, pem: str) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text(pem)
    without_inline = {k: v for k, v in env.items() if k != "GITHUB_PRIVATE_KEY"}
    settings = load_settings({**without_inline, "GITHUB_PRIVATE_KEY_PATH": str(key_file)},
                             dotenv=tmp_path / "none")
    assert settings.private_key == pem.strip() + "\n"


def test_an_inline_key_with_escaped_newlines(env: dict[str, str], tmp_path: Path,
                                             pem: str) -> None:
    settings = load_settings({**env, "GITHUB_PRIVATE_KEY": pem.replace("\n", "\\n")},
                             dotenv=tmp_path / "none")
    assert settings.private_key == pem.strip() + "\n"


@pytest.mark.parametrize(("change", "message"), [
    ({"GITHUB_APP_ID": ""}, "GITHUB_APP_ID is not set"),
    ({"GITHUB_APP_ID": "my-app"}, "GITHUB_APP_ID must be the numeric app id, got 'my-app'"),
    ({"GITHUB_APP_ID": "²"}, "GITHUB_APP_ID must be the numeric app id, got '²'"),
    ({"GITHUB_APP_ID": "١٢"}, "GITHUB_APP_ID must be the numeric app id, got '١٢'"),
    ({"GITHUB_WEBHOOK_SECRET": "  "}, "GITHUB_WEBHOOK_SECRET is not set"),
    ({"GITHUB_PRIVATE_KEY": ""}, "GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_PATH is not set"),
    ({"GITHUB_PRIVATE_KEY": "not a key"}, "GITHUB_PRIVATE_KEY is not a PEM private key"),
    ({"LOG_LEVEL": "loud"},
     "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got 'LOUD'"),
    ({"PORT": "http"}, "PORT must be a number, got 'http'"),
    ({"PORT": "-1"}, "PORT must not be negative, got '-1'"),
    ({"PORT": "70000"}, "PORT must be between 1 and 65535, got 70000"),
    ({"CONVEYOR_RESYNC_INTERVAL": "soon"},
     "CONVEYOR_RESYNC_INTERVAL must be a number, got 'soon'"),
    ({"CONVEYOR_RESYNC_INTERVAL": "nan"},
     "CONVEYOR_RESYNC_INTERVAL must be a finite number, got 'nan'"),
    ({"CONVEYOR_RESYNC_INTERVAL": "1e400"},
     "CONVEYOR_RESYNC_INTERVAL must be a finite number, got '1e400'"),
    ({"CONVEYOR_REDIS_CLAIM_TIMEOUT": "inf"},
     "CONVEYOR_REDIS_CLAIM_TIMEOUT must be a finite number, got 'inf'"),
    ({"CONVEYOR_REDIS_CLAIM_TIMEOUT": "-nan"},
     "CONVEYOR_REDIS_CLAIM_TIMEOUT must be a finite number, got '-nan'"),
    ({"CONVEYOR_WORKERS": "101"},
     "CONVEYOR_WORKERS must be at most 100 (GitHub answers at most 100 concurrent requests), "
     "got 101"),
    ({"CONVEYOR_WORKERS": "100000000"}, "CONVEYOR_WORKERS must be at most 100"),
    ({"GITHUB_API_URL": "ftp://github.example"},
     "GITHUB_API_URL must be an http(s) URL, got 'ftp://github.example'"),
    ({"GITHUB_API_URL": "https://github.example/api?x=1"},
     "GITHUB_API_URL must be an http(s) URL, got 'https://github.example/api?x=1'"),
    ({"GITHUB_API_URL": "http://[::1"}, "GITHUB_API_URL must be an http(s) URL, got 'http://[::1'"),
    ({"GITHUB_API_URL": "http://h:99999/"},
     "GITHUB_API_URL must be an http(s) URL, got 'http://h:99999/'"),
    ({"GITHUB_API_URL": "http://h:abc/"},
     "GITHUB_API_URL must be an http(s) URL, got 'http://h:abc/'"),
    ({"GITHUB_API_URL": "http://h:0/"}, "GITHUB_API_URL must be an http(s) URL, got 'http://h:0/'"),
    ({"GITHUB_API_URL": "https://:443/"},
     "GITHUB_API_URL must be an http(s) URL, got 'https://:443/'"),
    ({"CONVEYOR_REGISTRY_ENDPOINTS": "ghcr.io"}, "CONVEYOR_REGISTRY_ENDPOINTS: "),
    ({"CONVEYOR_REGISTRY_ENDPOINTS": "a=http://h:99999"},
     "CONVEYOR_REGISTRY_ENDPOINTS: expected host=http(s)://address, got 'a=http://h:99999'"),
    ({"CONVEYOR_REGISTRY_ENDPOINTS": "a=http://h:abc"},
     "CONVEYOR_REGISTRY_ENDPOINTS: expected host=http(s)://address, got 'a=http://h:abc'"),
    ({"CONVEYOR_REGISTRY_ENDPOINTS": "a=http://[::1"},
     "CONVEYOR_REGISTRY_ENDPOINTS: expected host=http(s)://address, got 'a=http://[::1'"),
    ({"CONVEYOR_CONTENT_LIMITS": "80/sec"}, "CONVEYOR_CONTENT_LIMITS must be `off` or limits "
                                           "like `80/min,500/h`, got '80/sec'"),
    ({"CONVEYOR_CONTENT_LIMITS": "0/min"}, "CONVEYOR_CONTENT_LIMITS must be `off`"),
    ({"CONVEYOR_CONTENT_LIMITS": "80/min,"}, "CONVEYOR_CONTENT_LIMITS must be `off`"),
    ({"CONVEYOR_CONTENT_LIMITS": "none"}, "CONVEYOR_CONTENT_LIMITS must be `off`"),
    ({"CONVEYOR_CONTENT_LIMITS": "80/min,90/min"},
     "CONVEYOR_CONTENT_LIMITS names /min twice: '80/min,90/min'"),
])
def test_bad_values_name_the_variable(env: dict[str, str], tmp_path: Path,
                                      change: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings({**env, **change}, dotenv=tmp_path / "none")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_an_unreadable_key_file(env: dict[str, str], tmp_path: Path) -> None:
    without_inline = {k: v for k, v in env.items() if k != "GITHUB_PRIVATE_KEY"}
    with pytest.raises(SettingsError) as raised:
        load_settings({**without_inline, "GITHUB_PRIVATE_KEY_PATH": str(tmp_path / "gone.pem")},
                      dotenv=tmp_path / "none")
    assert str(raised.value) == ("GITHUB_PRIVATE_KEY_PATH cannot be read: "
                                 "No such file or directory")


def test_a_key_file_that_is_not_utf8(env: dict[str, str], tmp_path: Path) -> None:
    without_inline = {k: v for k, v in env.items() if k != "GITHUB_PRIVATE_KEY"}
    key = tmp_path / "bad.pem"
    key.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SettingsError) as raised:
        load_settings({**without_inline, "GITHUB_PRIVATE_KEY_PATH": str(key)},
                      dotenv=tmp_path / "none")
    assert str(raised.value) == ("GITHUB_PRIVATE_KEY_PATH is not a PEM private key "
                                 "(not UTF-8 text)")


def at_most_2_gib() -> None:
    # a key file read to its end fails here before it fills the machine (/dev/zero has none)
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_serve_refuses_a_key_path_that_is_not_a_regular_file(env: dict[str, str], tmp_path: Path,
                                                             special: str) -> None:
    """Neither waits for a writer (a FIFO) nor reads without end (a device)."""
    key = tmp_path / "key.pem" if special == "fifo" else Path(special)
    if special == "fifo":
        os.mkfifo(key)
    without_inline = {k: v for k, v in env.items() if k != "GITHUB_PRIVATE_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "bot", "serve"], cwd=tmp_path, capture_output=True, text=True,
        timeout=30, preexec_fn=at_most_2_gib,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT),
             **coverage_env(), **without_inline, "GITHUB_PRIVATE_KEY_PATH": str(key)})
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"conveyor: GITHUB_PRIVATE_KEY_PATH cannot be read: {key} is not a regular file"]


def test_a_key_file_is_read_up_to_a_bound(env: dict[str, str], tmp_path: Path, pem: str) -> None:
    without_inline = {k: v for k, v in env.items() if k != "GITHUB_PRIVATE_KEY"}
    key = tmp_path / "large.pem"
    key.write_text(pem + "\n" * 70_000)
    with pytest.raises(SettingsError) as raised:
        load_settings({**without_inline, "GITHUB_PRIVATE_KEY_PATH": str(key)},
                      dotenv=tmp_path / "none")
    assert str(raised.value) == ("GITHUB_PRIVATE_KEY_PATH is not a PEM private key "
                                 "(longer than 65536 characters)")


@pytest.mark.parametrize("form", [serialization.PrivateFormat.PKCS8,
                                  serialization.PrivateFormat.TraditionalOpenSSL])
def test_an_encrypted_key_is_named_as_such(env: dict[str, str], tmp_path: Path,
                                           form: serialization.PrivateFormat) -> None:
    """`BEGIN ENCRYPTED PRIVATE KEY`, and `BEGIN RSA PRIVATE KEY` with `Proc-Type: 4,ENCRYPTED`."""
    encrypted = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, form,
        serialization.BestAvailableEncryption(b"passphrase")).decode()
    assert "ENCRYPTED" in encrypted
    key = tmp_path / "encrypted.pem"
    key.write_text(encrypted)
    without_inline = {k: v for k, v in env.items() if k != "GITHUB_PRIVATE_KEY"}
    for name, settings in (("GITHUB_PRIVATE_KEY", {**env, "GITHUB_PRIVATE_KEY": encrypted}),
                           ("GITHUB_PRIVATE_KEY_PATH",
                            {**without_inline, "GITHUB_PRIVATE_KEY_PATH": str(key)})):
        with pytest.raises(SettingsError) as raised:
            load_settings(settings, dotenv=tmp_path / "none")
        assert str(raised.value) == (
            f"{name} is an encrypted private key: Conveyor needs the unencrypted key GitHub "
            "gives (decrypt it with `openssl pkey`, or download a new one from the app's "
            "settings)")


@pytest.mark.parametrize(("text", "problem"), [
    ('{"auths":{"ghcr.io":{"auth":"é"}}}', "auths['ghcr.io'].auth is not base64 of user:password"),
    ("[" * 100_000, "is not JSON (expected a Docker config.json)"),
])
def test_an_auth_file_with_a_non_ascii_auth_or_too_deep_is_named(
        env: dict[str, str], tmp_path: Path, text: str, problem: str) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as raised:
        load_settings({**env, "CONVEYOR_REGISTRY_AUTH_FILE": str(auth)}, dotenv=tmp_path / "n")
    assert str(raised.value) == f"CONVEYOR_REGISTRY_AUTH_FILE {auth}: {problem}"


def test_a_broken_auth_file_names_the_variable_and_the_path(env: dict[str, str],
                                                            tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text("{not json")
    with pytest.raises(SettingsError) as raised:
        load_settings({**env, "CONVEYOR_REGISTRY_AUTH_FILE": str(auth)}, dotenv=tmp_path / "n")
    assert str(raised.value).startswith(f"CONVEYOR_REGISTRY_AUTH_FILE {auth}: ")


def test_a_sigstore_trust_file_is_read_and_a_broken_one_named(env: dict[str, str],
                                                              tmp_path: Path) -> None:
    from conveyor_emulator.sigstore.instance import GitHubSigstore

    roots = tmp_path / "roots.jsonl"
    roots.write_text(GitHubSigstore().trusted_roots(), encoding="utf-8")
    settings = load_settings({**env, "CONVEYOR_SIGSTORE_TRUST": str(roots)},
                             dotenv=tmp_path / "none")
    assert settings.sigstore_trust is not None
    assert settings.sigstore_trust.origin == str(roots)
    assert "trustedroot" not in repr(settings)
    assert load_settings(env, dotenv=tmp_path / "none").sigstore_trust is None
    roots.write_text('{"mediaType": "x"}\n', encoding="utf-8")
    with pytest.raises(SettingsError) as raised:
        load_settings({**env, "CONVEYOR_SIGSTORE_TRUST": str(roots)}, dotenv=tmp_path / "none")
    assert str(raised.value).startswith(
        f"CONVEYOR_SIGSTORE_TRUST {roots}: line 1: not a Sigstore trusted root: ")


def test_the_renderers_are_named_or_turned_off(env: dict[str, str]) -> None:
    settings = load_settings({**env, "CONVEYOR_KUSTOMIZE": "off", "CONVEYOR_HELM": "off"})
    assert settings.kustomize is None and settings.helm is None
    with pytest.raises(SettingsError) as helm:
        load_settings({**env, "CONVEYOR_HELM": "no-such-helm"})
    assert str(helm.value) == "CONVEYOR_HELM: no-such-helm is not an executable on the PATH"
    with pytest.raises(SettingsError) as kustomize:
        load_settings({**env, "CONVEYOR_KUSTOMIZE": "no-such-kustomize build"})
    assert str(kustomize.value).startswith("CONVEYOR_KUSTOMIZE: no-such-kustomize is not")


def test_a_sigstore_trust_file_nested_too_deep_is_named(env: dict[str, str],
                                                        tmp_path: Path) -> None:
    roots = tmp_path / "deep.json"
    roots.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(SettingsError) as raised:
        load_settings({**env, "CONVEYOR_SIGSTORE_TRUST": str(roots)}, dotenv=tmp_path / "none")
    assert str(raised.value).startswith(
        f"CONVEYOR_SIGSTORE_TRUST {roots}: line 1: not a Sigstore trusted root: ")
