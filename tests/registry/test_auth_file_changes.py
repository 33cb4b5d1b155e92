"""A registry auth file that changes while the server runs (a refreshed pull secret, an ECR
token of 12 hours) is read again; one that breaks keeps the credentials read before."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from bot.registry.credentials import AuthFile, load_auth_file


def write(path: Path, password: str) -> None:
    auth = base64.b64encode(f"bot:{password}".encode()).decode()
    path.write_text(json.dumps({"auths": {"123456789.dkr.ecr.eu-west-1.amazonaws.com":
                                          {"auth": auth}}}))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def password(found: AuthFile) -> str:
    [credential] = found.current().values()
    return credential.password


def test_a_changed_file_is_read_again_and_a_broken_one_keeps_the_last(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "config.json"
    write(path, "first-token")
    clock = Clock()
    found = AuthFile(path, load_auth_file(path), clock=clock, check_every=5)
    assert password(found) == "first-token"

    write(path, "second-token-which-is-longer")
    clock.now += 4
    assert password(found) == "first-token"  # looked at no more than every 5 s
    clock.now += 1
    assert password(found) == "second-token-which-is-longer"

    path.write_text("{not json")
    clock.now += 5
    with caplog.at_level(logging.WARNING):
        assert password(found) == "second-token-which-is-longer"
    assert "keeping the credentials read before" in caplog.text
    assert "second-token" not in caplog.text

    path.unlink()
    clock.now += 5
    assert password(found) == "second-token-which-is-longer"
    write(path, "third")
    clock.now += 5
    assert password(found) == "third"
