"""`python -m bot receive` without --url sends to the local bot on the PORT of `.env`, and says
so in one line on stderr when nothing listens there."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.receive import default_url, run
from tests.botprocess import free_port


def test_the_default_target_is_the_local_port(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PORT", raising=False)
    assert default_url() == "http://127.0.0.1:3000/api/github/webhooks"
    (tmp_path / ".env").write_text("PORT=8123\n", encoding="utf-8")
    assert default_url() == "http://127.0.0.1:8123/api/github/webhooks"


def test_nothing_listening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PORT", raising=False)
    (tmp_path / ".env").write_text(f"PORT={port}\nGITHUB_WEBHOOK_SECRET=s3cret\n",
                                   encoding="utf-8")
    monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
    (tmp_path / "ping.json").write_text('{"zen": "Keep it logically awesome."}',
                                        encoding="utf-8")
    assert run("ping", str(tmp_path / "ping.json"), None) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"could not reach http://127.0.0.1:{port}/api/github/webhooks: ")
    assert len(err.splitlines()) == 1
