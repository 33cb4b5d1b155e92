"""`python -m bot setup` when it cannot go on: GitHub out of reach from the done page, a port
already in use, a GITHUB_API_URL that is no URL, a manifest path that is a folder."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bot.cli.setup_flow import SetupError, load_manifest, run
from bot.runtime.settings import SettingsError
from conveyor_emulator import Emulator
from tests.botprocess import free_port
from tests.test_setup_flow import client_for, config_for, emulator

__all__ = ["emulator"]  # the fixture


async def test_github_out_of_reach_from_the_done_page(emulator: Emulator,
                                                      tmp_path: Path) -> None:
    api_url = f"http://127.0.0.1:{free_port()}"
    client, state = await client_for(config_for(emulator, tmp_path / ".env", api_url=api_url))
    try:
        page = await client.get("/setup/done", params={"code": "c0de", "state": state})
        assert page.status == 502
        assert f"Could not reach {api_url}: " in await page.text()
    finally:
        await client.close()
    assert not (tmp_path / ".env").exists()


def test_a_port_in_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert run(host="127.0.0.1", port=port, org=None, webhook_url=None, manifest=None,
                   env_file=tmp_path / ".env", force=False) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"conveyor setup: cannot listen on 127.0.0.1:{port}: ")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / ".env").exists()


def test_an_api_url_that_is_no_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_API_URL", "github.example.com")
    with pytest.raises(SettingsError) as refused:
        run(host="127.0.0.1", port=3000, org=None, webhook_url=None, manifest=None,
            env_file=tmp_path / ".env", force=False)
    assert str(refused.value) == ("GITHUB_API_URL must be an http(s) URL, got "
                                  "'github.example.com'")


def test_a_manifest_path_that_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SetupError) as refused:
        load_manifest(tmp_path)
    assert str(refused.value).startswith(f"{tmp_path}: cannot read the app manifest: ")
