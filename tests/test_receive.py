"""`python -m bot receive`: signs a saved payload like GitHub and sends it to a running server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli.receive import run, send, signature_for
from bot.runtime.settings import SettingsError
from tests.harness import SECRET, World, close_world, make_world

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await make_world(validate_openapi=False)
    try:
        yield built
    finally:
        await close_world(built)


async def silent_release(world: World, version: str) -> dict[str, Any]:
    """The image and the release exist on GitHub, but the bot was not told: the saved
    `release.released` payload, as GitHub would have sent it."""
    em = world.emulator
    url, em.webhook_url = em.webhook_url, None
    try:
        await em.publish_container("acme", "web", em.build_image(f"web:{version}"), [version],
                                   source_repo="acme/web", emit=False)
        await em.create_tag("acme/web", f"v{version}")
        await em.publish_release("acme/web", f"v{version}")
        await em.settle()
    finally:
        em.webhook_url = url
    delivery = next(d for d in reversed(em.deliveries)
                    if d.event == "release" and d.action == "released")
    return delivery.payload


def test_signature_is_githubs() -> None:
    # the example of GitHub's documentation "Validating webhook deliveries"
    assert signature_for(b"Hello, World!", "It's a Secret to Everybody") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")


async def test_signed_payload_is_accepted_and_processed(world: World, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    payload = tmp_path / "release.json"
    payload.write_text(json.dumps(await silent_release(world, "1.2.0")), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no .env of the developer's checkout
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    status = await asyncio.to_thread(run, "release", str(payload), world.webhook_url)
    assert status == 0
    await world.settle()
    assert world.pull("Promote web 1.2.0 to staging")["merged"]


async def test_ping_answers_200_and_wrong_secret_401(world: World) -> None:
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    assert (await send(world.webhook_url, "ping", body, SECRET))[0] == 200
    status, text = await send(world.webhook_url, "ping", body, "not-the-secret")
    assert status == 401
    assert "signature" in text


async def test_wrong_secret_exits_1(world: World, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    payload = tmp_path / "ping.json"
    payload.write_text('{"zen": "x"}', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", "not-the-secret")
    assert await asyncio.to_thread(run, "ping", str(payload), world.webhook_url) == 1
    out, err = capsys.readouterr()
    assert out.startswith("401 ") and err == ""


def test_unreadable_or_invalid_payload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    assert run("ping", str(tmp_path / "missing.json"), "http://127.0.0.1:9/x") == 1
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert run("ping", str(tmp_path / "bad.json"), "http://127.0.0.1:9/x") == 1
    out, err = capsys.readouterr()
    assert out == ""
    missing, bad = err.splitlines()
    assert missing == f"{tmp_path / 'missing.json'}: cannot read: No such file or directory"
    assert bad.startswith(f"{tmp_path / 'bad.json'}: not valid JSON: ")


@pytest.mark.parametrize("device", ["/dev/zero", "fifo"])
def test_a_payload_that_is_not_a_regular_file_is_refused(
        device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    if device == "fifo":
        device = str(tmp_path / "payload.fifo")
        os.mkfifo(device)
    assert run("push", device, "http://127.0.0.1:9/x") == 1
    assert capsys.readouterr() == ("", f"{device}: cannot read: not a regular file\n")


def test_a_payload_larger_than_github_sends_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    large = tmp_path / "large.json"
    large.write_bytes(b'{"a": "' + b"x" * (25 * 1024 * 1024) + b'"}')
    assert run("push", str(large), "http://127.0.0.1:9/x") == 1
    assert capsys.readouterr() == ("", f"{large}: larger than the 25 MB GitHub sends at most\n")


def test_a_payload_nested_too_deep_is_invalid_json(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    (tmp_path / "deep.json").write_text("[" * 100_000, encoding="utf-8")
    assert run("push", str(tmp_path / "deep.json"), "http://127.0.0.1:9/x") == 1
    assert capsys.readouterr() == ("", f"{tmp_path / 'deep.json'}: not valid JSON: "
                                      "nested too deeply\n")


def test_an_event_with_a_control_character_is_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    (tmp_path / "ok.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        run("push\r\nX-Evil: 1", str(tmp_path / "ok.json"), "http://127.0.0.1:9/x")
    assert str(refused.value) == ("-e/--event 'push\\r\\nX-Evil: 1': an event name has no "
                                  "control characters")


@pytest.mark.parametrize("url", ["notaurl", "ftp://example.test/hook", "http://[::1",
                                 "http:///api/github/webhooks", "http://127.0.0.1:0/hook"])
def test_a_url_that_is_not_http_with_a_host_is_a_usage_error(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    (tmp_path / "ok.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SettingsError) as refused:
        run("push", str(tmp_path / "ok.json"), url)
    assert str(refused.value) == f"--url must be an http(s) URL, got {url!r}"


async def test_an_answer_that_is_not_utf8_is_printed(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    async def binary(_request: web.Request) -> web.Response:
        return web.Response(body=b"ok \xff", content_type="text/plain", charset="utf-8")

    app = web.Application()
    app.router.add_post("/bin", binary)
    server = TestServer(app)
    await server.start_server()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    (tmp_path / "ok.json").write_text("{}", encoding="utf-8")
    try:
        assert await asyncio.to_thread(run, "push", str(tmp_path / "ok.json"),
                                       str(server.make_url("/bin"))) == 0
    finally:
        await server.close()
    assert capsys.readouterr().out == "200 ok \ufffd\n"


def test_missing_secret_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "ping.json").write_text("{}", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "bot", "receive", "-e", "ping", "-p", "ping.json"],
        cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "GITHUB_WEBHOOK_SECRET" in lines[0]
    assert done.stdout == ""


def _read_until(process: subprocess.Popen[str], pattern: str, timeout: float) -> list[str]:
    """The lines printed until one matches; fails after `timeout` even when nothing is printed."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in stdout:
            lines.append(line.rstrip("\n"))
            if re.search(pattern, line):
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(timeout):
        process.kill()
        raise AssertionError(f"{pattern!r} never printed:\n" + "\n".join(lines))
    return lines


def _pulls(state_url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(state_url, timeout=10) as response:
        result: list[dict[str, Any]] = json.load(response)["result"]
    return result


def test_receive_against_the_sandbox_in_keep_mode(tmp_path: Path) -> None:
    sandbox = subprocess.Popen(
        [sys.executable, "-m", "bot", "sandbox", "--keep", "--log-dir", str(tmp_path)],
        cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        lines = _read_until(sandbox, r"^then see the pull requests: ", 60)
        text = "\n".join(lines)
        assert "Story played in " in text
        example = next(line.strip() for line in lines
                       if line.strip().startswith("GITHUB_WEBHOOK_SECRET="))
        secret = re.search(r"webhook secret:\s+(\S+)", text)
        webhook = re.search(r"Conveyor webhook URL:\s+(\S+)", text)
        assert secret and webhook
        assert example.startswith(f"GITHUB_WEBHOOK_SECRET={secret[1]} python -m bot receive "
                                  "-e release -p ")
        assert example.endswith(f" --url {webhook[1]}")
        payload = example.split(" -p ", 1)[1].split(" ", 1)[0]
        release = json.loads(Path(payload).read_text(encoding="utf-8"))
        assert release["action"] == "released"
        title = f"Promote web {release['release']['tag_name'].removeprefix('v')} to staging"
        state_url = lines[-1].split(": ", 1)[1]
        before = {pr["title"] for pr in _pulls(state_url)}
        assert title not in before

        # the printed command, as a user pastes it
        assignment, command = example.split(" ", 1)
        argv = [sys.executable, *command.split(" ")[1:]]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              env=clean_env(GITHUB_WEBHOOK_SECRET=assignment.split("=", 1)[1]),
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("202 ")

        deadline = time.monotonic() + 20
        merged: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not merged:
            merged = [pr for pr in _pulls(state_url)
                      if pr["title"] == title and pr["merged"]]
            time.sleep(0.2)
        assert merged, _pulls(state_url)
    finally:
        sandbox.send_signal(signal.SIGINT)
        out, err = sandbox.communicate(timeout=30)
    assert sandbox.returncode == 0, err
    assert "sandbox stopped" in out
    assert err == ""
