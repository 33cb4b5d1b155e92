"""CONVEYOR_REDIS_URL: validated at start, one line naming the variable, exit code 2."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.runtime.settings import SettingsError, load_settings
from tests.botprocess import REPO_ROOT, coverage_env


@pytest.fixture(scope="module")
def base_env() -> dict[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s3cret-for-settings",
            "GITHUB_PRIVATE_KEY": pem}


def test_unset_means_in_memory(base_env: dict[str, str], tmp_path: Path) -> None:
    settings = load_settings(base_env, dotenv=tmp_path / ".env")
    assert settings.redis_url == "" and settings.redis_claim_timeout == 30.0


@pytest.mark.skipif(importlib.util.find_spec("redis") is None,
                    reason="the redis client is not installed (pip install -e '.[test]')")
@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "rediss://:pw@redis.internal:6380",
                                 "redis://redis"])
def test_valid_urls(base_env: dict[str, str], tmp_path: Path, url: str) -> None:
    env = {**base_env, "CONVEYOR_REDIS_URL": url, "CONVEYOR_REDIS_CLAIM_TIMEOUT": "5"}
    settings = load_settings(env, dotenv=tmp_path / ".env")
    assert settings.redis_url == url and settings.redis_claim_timeout == 5
    assert "pw" not in repr(settings)


@pytest.mark.parametrize("url", ["http://redis:6379", "redis://", "redis://host:notaport",
                                 "redis://host/zero", "redis://:hunter2@host:0", "localhost:6379"])
def test_malformed_urls_name_the_variable_and_hide_passwords(
        base_env: dict[str, str], tmp_path: Path, url: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings({**base_env, "CONVEYOR_REDIS_URL": url}, dotenv=tmp_path / ".env")
    message = str(raised.value)
    assert message.startswith("CONVEYOR_REDIS_URL ") and "hunter2" not in message


def test_serve_exits_2_with_one_line(base_env: dict[str, str], tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT), **coverage_env(),
           **base_env,
           "CONVEYOR_REDIS_URL": "redis://:hunter2@host:99999"}
    done = subprocess.run([sys.executable, "-m", "bot", "serve"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "CONVEYOR_REDIS_URL" in lines[0] and "hunter2" not in lines[0]
