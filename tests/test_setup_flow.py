"""`python -m bot setup`: the manifest flow against the emulator, and the `.env` it writes."""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.cli.setup_flow import (
    SetupConfig,
    SetupError,
    build_setup_app,
    env_text,
    find_manifest,
    load_manifest,
    run,
    serve_until_done,
    setup_state,
    write_env,
)
from bot.runtime.settings import load_settings
from conveyor_emulator import Emulator

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = load_manifest(ROOT / "app-manifest.yml")
WEBHOOK_URL = "https://conveyor.acme.dev/api/github/webhooks"


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    em = Emulator(webhook_secret="unused-here")
    await em.start()
    em.add_org("acme")
    try:
        yield em
    finally:
        await em.stop()


def config_for(em: Emulator, env_file: Path, **changes: Any) -> SetupConfig:
    values: dict[str, Any] = {"api_url": em.base_url, "manifest": MANIFEST,
                              "env_file": env_file, "port": 3000, "webhook_url": WEBHOOK_URL}
    values.update(changes)
    return SetupConfig(**values)


def read_form(page: str) -> tuple[str, dict[str, Any]]:
    """The form's action and the manifest it posts, as a browser would send them."""
    action = re.search(r'<form action="([^"]+)" method="post">', page)
    manifest = re.search(r'<input type="hidden" name="manifest" value="([^"]+)">', page)
    assert action and manifest, page
    return html.unescape(action[1]), json.loads(html.unescape(manifest[1]))


async def client_for(config: SetupConfig) -> tuple[TestClient[Any, Any], str]:
    """A client of the local setup page, and the `state` that page expects back."""
    app = build_setup_app(config)
    client: TestClient[Any, Any] = TestClient(TestServer(app))
    await client.start_server()
    return client, setup_state(app).state


async def test_full_flow_writes_env(emulator: Emulator, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    config = config_for(emulator, env_file)
    client, expected = await client_for(config)
    try:
        page = await client.get("/")
        assert page.status == 200
        action, manifest = read_form(await page.text())
        assert action.startswith(f"{emulator.web_url}/settings/apps/new?state=")
        state = parse_qs(urlsplit(action).query)["state"][0]
        assert state == expected
        assert manifest["redirect_url"] == "http://127.0.0.1:3000/setup/done"
        assert manifest["hook_attributes"] == {"url": WEBHOOK_URL, "active": True}
        assert manifest["default_permissions"] == MANIFEST["default_permissions"]
        assert manifest["default_events"] == MANIFEST["default_events"]

        # GitHub creates the app and sends the browser back with a code
        code = emulator.issue_manifest_code(manifest)
        done = await client.get("/setup/done", params={"code": code, "state": state})
        assert done.status == 200, await done.text()
        body = await done.text()
        assert "Conveyor is registered" in body
        assert "/installations/new" in body
        assert "Require conveyor/promotion-gate from this app" in body
        assert "integration_id" in body
    finally:
        await client.close()

    created = emulator.world.manifest_apps["conveyor"]
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    text = env_text_lines(env_file)
    assert text["GITHUB_APP_ID"] == str(created.id)
    assert "\n" not in text["GITHUB_PRIVATE_KEY"]
    assert text["GITHUB_PRIVATE_KEY"].startswith("-----BEGIN")
    assert text["GITHUB_PRIVATE_KEY"].count("\\n") >= 10
    assert text["GITHUB_WEBHOOK_SECRET"] == created.webhook_secret
    assert text["GITHUB_API_URL"] == emulator.base_url
    settings = load_settings(environ={}, dotenv=env_file)
    assert settings.app_id == str(created.id)
    assert settings.private_key.strip() == created.pem.strip()
    assert settings.webhook_secret == created.webhook_secret
    assert settings.api_url == emulator.base_url


def env_text_lines(path: Path) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    return {key: value for key, value in pairs}


async def test_wrong_state_is_refused(emulator: Emulator, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    client, expected = await client_for(config_for(emulator, env_file))
    try:
        _action, manifest = read_form(await (await client.get("/")).text())
        code = emulator.issue_manifest_code(manifest)
        for params in ({"code": code, "state": "forged"}, {"code": code}):
            refused = await client.get("/setup/done", params=params)
            assert refused.status == 403
            assert "does not match" in await refused.text()
        assert not env_file.exists()
        state = expected
        missing = await client.get("/setup/done", params={"state": state})
        assert missing.status == 400
        unknown = await client.get("/setup/done", params={"code": "nope", "state": state})
        assert unknown.status == 502
        assert "GitHub refused the code (404)" in await unknown.text()
        assert not env_file.exists()
        # the code was not spent by the refusals: the flow still completes
        ok = await client.get("/setup/done", params={"code": code, "state": state})
        assert ok.status == 200
        again = await client.get("/setup/done", params={"code": code, "state": state})
        assert again.status == 409
    finally:
        await client.close()


async def test_org_and_placeholder_webhook(emulator: Emulator, tmp_path: Path) -> None:
    client, _state = await client_for(config_for(emulator, tmp_path / ".env", org="acme",
                                         webhook_url=None))
    try:
        page = await (await client.get("/")).text()
    finally:
        await client.close()
    action, manifest = read_form(page)
    assert action.startswith(f"{emulator.web_url}/organizations/acme/settings/apps/new?state=")
    assert manifest["hook_attributes"]["url"] == MANIFEST["hook_attributes"]["url"]
    assert "placeholder" in page


async def test_existing_env_is_kept_without_force(emulator: Emulator, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("KEEP=me\n", encoding="utf-8")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    client, expected = await client_for(config_for(emulator, env_file))
    try:
        _action, manifest = read_form(await (await client.get("/")).text())
        state = expected
        code = emulator.issue_manifest_code(manifest)
        done = await client.get("/setup/done", params={"code": code, "state": state})
        assert done.status == 200
        assert "--force" in await done.text()
    finally:
        await client.close()
    assert env_file.read_text(encoding="utf-8") == "KEEP=me\n"
    [saved] = (tmp_path / "cwd").iterdir()
    assert load_settings(environ={}, dotenv=saved).webhook_secret == (
        emulator.world.manifest_apps["conveyor"].webhook_secret)


def test_write_env_force_replaces_and_tightens_mode(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OLD=1\n", encoding="utf-8")
    env_file.chmod(0o644)
    with pytest.raises(SetupError, match="--force"):
        write_env(env_file, "NEW=1\n", force=False)
    write_env(env_file, "NEW=1\n", force=True)
    assert env_file.read_text(encoding="utf-8") == "NEW=1\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600


def test_web_url_of_github_and_enterprise_server(tmp_path: Path) -> None:
    dotcom = SetupConfig(api_url="https://api.github.com", manifest=MANIFEST,
                         env_file=tmp_path / ".env")
    assert dotcom.new_app_url == "https://github.com/settings/apps/new"
    ghes = SetupConfig(api_url="https://ghe.acme.dev/api/v3", manifest=MANIFEST,
                       env_file=tmp_path / ".env", org="acme", host="0.0.0.0", port=8080)
    assert ghes.new_app_url == "https://ghe.acme.dev/organizations/acme/settings/apps/new"
    assert ghes.local_url == "http://127.0.0.1:8080"
    app = {"id": 7, "slug": "conveyor", "pem": "-----BEGIN KEY-----\nAB\n-----END KEY-----\n",
           "webhook_secret": "s3cret"}
    assert "GITHUB_API_URL" not in env_text(app, "https://api.github.com")
    assert "GITHUB_API_URL=https://ghe.acme.dev/api/v3\n" in env_text(
        app, "https://ghe.acme.dev/api/v3/")
    assert "GITHUB_PRIVATE_KEY=-----BEGIN KEY-----\\nAB\\n-----END KEY-----\\n\n" in env_text(
        app, "https://api.github.com")


def test_manifest_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_manifest(None) == ROOT / "app-manifest.yml"  # the source checkout's
    (tmp_path / "app-manifest.yml").write_text("name: Mine\n", encoding="utf-8")
    assert find_manifest(None) == tmp_path / "app-manifest.yml"
    with pytest.raises(SetupError, match="no such file"):
        find_manifest(tmp_path / "missing.yml")
    (tmp_path / "bad.yml").write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(SetupError, match="mapping"):
        load_manifest(tmp_path / "bad.yml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nname: y\n", "bad.yml:2: cannot read the app manifest: duplicate key 'name'"),
        ("name: [\n", "bad.yml:2: cannot read the app manifest: expected the node content"),
        ("name: x\n? [a]\n: 1\n", "bad.yml: an app manifest holds JSON values only"),
        ("name: x\nratio: .nan\n", "bad.yml: an app manifest holds JSON values only"),
    ],
)
def test_a_manifest_that_is_not_plain_json_is_refused_in_one_line(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "bad.yml").write_text(text, encoding="utf-8")
    with pytest.raises(SetupError) as caught:
        load_manifest(tmp_path / "bad.yml")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    (tmp_path / "dated.yml").write_text("name: x\nsince: 2024-06-27\n", encoding="utf-8")
    assert load_manifest(tmp_path / "dated.yml") == {"name": "x", "since": "2024-06-27"}


def test_run_refuses_an_existing_env_before_serving(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    (tmp_path / ".env").write_text("X=1\n", encoding="utf-8")
    assert run(host="127.0.0.1", port=3000, org=None, webhook_url=None, manifest=None,
               env_file=Path(".env"), force=False) == 2
    assert "exists; run again with --force" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_local_server_runs_until_the_app_is_registered(emulator: Emulator,
                                                             tmp_path: Path) -> None:
    port = free_port()
    config = config_for(emulator, tmp_path / ".env", port=port)
    served = asyncio.create_task(serve_until_done(config))
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            try:
                async with session.get(base + "/") as response:
                    page = await response.text()
                    break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("the setup page never came up")
        action, manifest = read_form(page)
        assert manifest["redirect_url"] == f"{base}/setup/done"
        state = parse_qs(urlsplit(action).query)["state"][0]
        code = emulator.issue_manifest_code(manifest)
        # where GitHub redirects the browser
        async with session.get(manifest["redirect_url"],
                               params={"code": code, "state": state}) as response:
            assert response.status == 200
    app = await asyncio.wait_for(served, 10)
    assert app is not None
    assert app["id"] == emulator.world.manifest_apps["conveyor"].id
    assert (tmp_path / ".env").is_file()


def test_command_line_serves_until_stopped(tmp_path: Path) -> None:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "setup", "--port", str(port), "--manifest",
         str(ROOT / "app-manifest.yml")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith(f"Open http://127.0.0.1:{port}/ in your browser to register the "
                                "GitHub App on https://github.com"), first
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            action, _manifest = read_form(response.read().decode())
        assert action.startswith("https://github.com/settings/apps/new?state=")
    finally:
        process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "stopped before the app was registered; nothing was written" in err
    assert not (tmp_path / ".env").exists()


async def convert(emulator: Emulator, manifest: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    code = emulator.issue_manifest_code(manifest)
    async with aiohttp.ClientSession() as session, session.post(
            f"{emulator.base_url}/app-manifests/{code}/conversions") as response:
        return response.status, await response.json()


async def test_the_shipped_manifest_is_accepted_by_the_manifest_flow(emulator: Emulator,
                                                                      tmp_path: Path) -> None:
    """What `python -m bot setup` posts: every event has the permission GitHub requires."""
    from bot.cli.setup_flow import manifest_for

    status, body = await convert(emulator, manifest_for(config_for(emulator, tmp_path / ".e")))
    assert status == 201, body
    assert body["permissions"]["merge_queues"] == "read"
    assert "merge_group" in body["events"]


@pytest.mark.parametrize(("permissions", "events", "refused"), [
    ({"contents": "write"}, ["push", "merge_group"], "merge_group"),
    ({"contents": "read", "statuses": "read"}, ["status", "check_run"], "check_run"),
    ({"metadata": "read"}, ["registry_package"], "registry_package"),
])
async def test_events_without_their_permission_are_refused(
        emulator: Emulator, permissions: dict[str, str], events: list[str], refused: str
) -> None:
    status, body = await convert(emulator, {"name": "x", "default_permissions": permissions,
                                            "default_events": events})
    assert status == 422, body
    assert "Default events are not supported by permissions" in body["message"]
    assert body["message"].endswith(refused)


def test_the_manifest_asks_for_no_more_than_the_bot_uses() -> None:
    """Commit statuses are read (evidence), never written: `statuses: read`; and the
    emulator's installations grant exactly what the manifest asks for, so a write the manifest
    does not allow answers 403 in every behaviour test."""
    from conveyor_emulator.driver.seeding import DEFAULT_PERMISSIONS

    assert MANIFEST["default_permissions"]["statuses"] == "read"
    assert MANIFEST["default_permissions"]["merge_queues"] == "read"
    assert MANIFEST["default_permissions"] == DEFAULT_PERMISSIONS
