"""`python -m bot setup` when it cannot go on: GitHub out of reach from the done page, a port
already in use, a GITHUB_API_URL that is no URL, a manifest path that is a folder, an env file
that cannot be written (refused before serving; saved elsewhere when found after the code is
spent)."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from bot.cli.setup_flow import SetupError, load_manifest, run
from bot.runtime.settings import SettingsError, load_settings
from conveyor_emulator import Emulator
from tests.botprocess import free_port
from tests.test_setup_flow import client_for, config_for, emulator, read_form

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


@pytest.mark.parametrize("url", ["github.example.com", "https://", "http://[::1",
                                 "https://github.example/api?x=1"])
def test_an_api_url_that_is_no_url(url: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked as `serve` checks it: a prefix of `http` is not enough."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_API_URL", url)
    with pytest.raises(SettingsError) as refused:
        run(host="127.0.0.1", port=3000, org=None, webhook_url=None, manifest=None,
            env_file=tmp_path / ".env", force=False)
    assert str(refused.value) == f"GITHUB_API_URL must be an http(s) URL, got {url!r}"


def test_a_manifest_path_that_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SetupError) as refused:
        load_manifest(tmp_path)
    assert str(refused.value).startswith(f"{tmp_path}: cannot read the app manifest: ")


@pytest.mark.parametrize(("where", "message"), [
    ("missing/.env", "missing: no such folder (for --env-file "),
    ("folder", "folder is a folder; --env-file names the file to write"),
])
def test_an_env_file_that_cannot_be_written_is_refused_before_serving(
        where: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    (tmp_path / "folder").mkdir()
    assert run(host="127.0.0.1", port=free_port(), org=None, webhook_url=None, manifest=None,
               env_file=Path(where), force=True) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("conveyor setup: ") and message in err
    assert len(err.splitlines()) == 1


def test_an_env_file_in_a_read_only_folder_is_refused_before_serving(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    (tmp_path / "ro").mkdir(mode=0o555)
    if os.geteuid() == 0:  # root writes anywhere: the folder answers as it does to others
        read_only = tmp_path / "ro"
        monkeypatch.setattr(os, "access", lambda path, mode, **_: Path(path) != read_only)
    assert run(host="127.0.0.1", port=free_port(), org=None, webhook_url=None, manifest=None,
               env_file=tmp_path / "ro" / ".env", force=False) == 2
    assert "cannot write there" in capsys.readouterr().err


async def complete(emulator: Emulator, env_file: Path) -> tuple[int, str]:
    client, state = await client_for(config_for(emulator, env_file))
    try:
        _action, manifest = read_form(await (await client.get("/")).text())
        code = emulator.issue_manifest_code(manifest)
        page = await client.get("/setup/done", params={"code": code, "state": state})
        return page.status, await page.text()
    finally:
        await client.close()


async def test_an_env_file_that_fails_after_the_code_is_spent_is_saved_elsewhere(
        emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    status, page = await complete(emulator, tmp_path / "gone" / ".env")
    assert status == 200
    assert "Could not reach" not in page
    [saved] = (tmp_path / "cwd").iterdir()
    assert f"Could not write {tmp_path / 'gone' / '.env'} (cannot write " in page
    assert f"Wrote {saved} (mode 0600)" in page
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    created = emulator.world.manifest_apps["conveyor"]
    settings = load_settings(environ={}, dotenv=saved)
    assert settings.private_key.strip() == created.pem.strip()
    assert settings.webhook_secret == created.webhook_secret
    assert "PRIVATE KEY-----" not in page and created.webhook_secret not in page


async def test_the_temporary_folder_is_the_last_place_the_settings_are_saved(
        emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    (tmp_path / "cwd").rmdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    status, _page = await complete(emulator, tmp_path / "gone" / ".env")
    assert status == 200
    [saved] = (tmp_path / "tmp").iterdir()
    assert load_settings(environ={}, dotenv=saved).webhook_secret == (
        emulator.world.manifest_apps["conveyor"].webhook_secret)

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-tmp"))
    status, page = await complete(emulator, tmp_path / "gone" / ".env")
    assert status == 500
    assert "The app is registered, its settings are not saved" in page
    assert "Generate a private key and set a new webhook secret" in page
    assert "PRIVATE KEY-----" not in page
