"""The command line as a person meets it: bad input is one line on stderr and a known exit code.

Settings and usage errors exit 2; a refused promotion or an invalid file exits 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO

import aiohttp
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from bot.render.tool import find_kustomize
from bot.sandbox.demo import DEMO_FILES
from conveyor_emulator.apps.auth import generate_private_key

ROOT = Path(__file__).resolve().parent.parent
DIGEST = "sha256:" + "a" * 64


def conveyor(*args: str, cwd: Path, env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "CONVEYOR_", "HOST", "PORT"))}
    base["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=cwd,
                          env={**base, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def demo_repo(root: Path) -> Path:
    for relative, text in DEMO_FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


# -- bump ------------------------------------------------------------------------------------------
def test_bump_on_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    repo = demo_repo(tmp_path / "repo")
    overlay = repo / "apps/web/overlays/staging/kustomization.yaml"
    overlay.write_bytes(overlay.read_bytes() + "# café\n".encode("latin-1"))
    done = conveyor("bump", "--repo", str(repo), "--service", "web", "--env", "staging",
                    "--image", f"ghcr.io/acme/web:1.2.0@{DIGEST}", cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done) == ("apps/web/overlays/staging/kustomization.yaml: not valid UTF-8 "
                              "(byte 0xe9 at line 8, column 6); Conveyor edits UTF-8 files only")
    assert done.stdout == ""


def test_bump_refuses_a_digest_without_a_tag(tmp_path: Path) -> None:
    repo = demo_repo(tmp_path / "repo")
    before = (repo / "apps/web/overlays/staging/kustomization.yaml").read_text()
    done = conveyor("bump", "--repo", str(repo), "--service", "web", "--env", "staging",
                    "--image", f"ghcr.io/acme/web@{DIGEST}", "--write", cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done) == ("--image must carry a tag (NAME:TAG@sha256:...): a promotion "
                              "pins the digest and writes the tag it was released as")
    assert (repo / "apps/web/overlays/staging/kustomization.yaml").read_text() == before


def test_bump_without_its_arguments_is_a_usage_error(tmp_path: Path) -> None:
    done = conveyor("bump", cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == ("conveyor bump: the following arguments are required: --repo, "
                              "--service, --env (see conveyor bump --help)")


def chart_repo(root: Path) -> Path:
    files = {".github/conveyor.yml": (
        "version: 1\nallowed_images: [\"ghcr.io/acme/\"]\nservices:\n  web-chart:\n"
        "    chart: ghcr.io/acme/charts/web\n    source: acme/web\nenvironments:\n"
        "  - name: staging\n    path: deploy/staging/helmfile.yaml\n"),
        "deploy/staging/helmfile.yaml": ("releases:\n  - name: web\n"
                                         "    chart: oci://ghcr.io/acme/charts/web\n"
                                         "    version: 1.4.1  # the chart\n")}
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def test_bump_a_chart_writes_its_version(tmp_path: Path) -> None:
    repo = chart_repo(tmp_path / "repo")
    done = conveyor("bump", "--repo", str(repo), "--service", "web-chart", "--env", "staging",
                    "--chart", f"ghcr.io/acme/charts/web:1.4.2@{DIGEST}", "--write",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "-    version: 1.4.1  # the chart\n+    version: 1.4.2  # the chart\n" in done.stdout
    assert (repo / "deploy/staging/helmfile.yaml").read_text().endswith(
        "    version: 1.4.2  # the chart\n")
    done = conveyor("bump", "--repo", str(repo), "--service", "web-chart", "--env", "staging",
                    "--image", f"ghcr.io/acme/charts/web:1.4.3@{DIGEST}", cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done) == "service web-chart is a Helm chart: use --chart"


# -- sandbox ---------------------------------------------------------------------------------------
def test_sandbox_log_dir_under_a_missing_folder(tmp_path: Path) -> None:
    done = conveyor("sandbox", "--log-dir", str(tmp_path / "no" / "logs"), cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == (f"conveyor sandbox: argument --log-dir: {tmp_path / 'no'}: "
                              "no such folder (see conveyor sandbox --help)")
    assert done.stdout == ""


def test_sandbox_log_dir_at_a_file(tmp_path: Path) -> None:
    (tmp_path / "log").write_text("x")
    done = conveyor("sandbox", "--log-dir", str(tmp_path / "log"), cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == (f"conveyor sandbox: argument --log-dir: {tmp_path / 'log'} is a "
                              "file, not a folder (see conveyor sandbox --help)")


def test_sandbox_config_at_a_folder(tmp_path: Path) -> None:
    done = conveyor("sandbox", "--config", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done) == f"{tmp_path}: a folder, not a policy file"


def test_sandbox_config_that_is_not_a_regular_file(tmp_path: Path) -> None:
    done = conveyor("sandbox", "--config", "/dev/zero", cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done) == "/dev/zero: not a regular file"


# -- setup -----------------------------------------------------------------------------------------
def test_setup_port_out_of_range(tmp_path: Path) -> None:
    done = conveyor("setup", "--port", "99999", cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == ("conveyor setup: argument --port: a port is between 1 and "
                              "65535, got 99999 (see conveyor setup --help)")
    assert not (tmp_path / ".env").exists()


def test_setup_webhook_url_that_is_not_a_url(tmp_path: Path) -> None:
    done = conveyor("setup", "--webhook-url", "notaurl", cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == (
        "conveyor setup: argument --webhook-url: expected an http(s) URL such as "
        "https://conveyor.example.com/api/github/webhooks, got 'notaurl' "
        "(see conveyor setup --help)")


def test_setup_host_with_a_label_longer_than_dns_allows(tmp_path: Path) -> None:
    host = "a" * 70 + ".example.com"
    done = conveyor("setup", "--host", host, cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done) == (
        f"conveyor setup: argument --host: expected an address or a host name whose labels are "
        f"1 to 63 characters, got {host!r} (see conveyor setup --help)")


def test_setup_manifest_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "app-manifest.yml").write_bytes("name: Convéyor\n".encode("latin-1"))
    done = conveyor("setup", "--manifest", "app-manifest.yml", cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done) == ("conveyor setup: app-manifest.yml: cannot read the app manifest: "
                              "not UTF-8 text")
    assert not (tmp_path / ".env").exists()


# -- serve -----------------------------------------------------------------------------------------
def serve_env(key_pem: str, **extra: str) -> dict[str, str]:
    return {"GITHUB_APP_ID": "1", "GITHUB_WEBHOOK_SECRET": "s3cret",
            "GITHUB_PRIVATE_KEY": key_pem.replace("\n", "\\n"), **extra}


def test_serve_with_an_ec_key(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    done = conveyor("serve", cwd=tmp_path, env=serve_env(key))
    assert done.returncode == 2
    assert one_line(done) == ("conveyor: GITHUB_PRIVATE_KEY is not an RSA private key (GitHub "
                              "App keys are RSA; download a new one from the app's settings)")


def test_serve_with_a_host_that_is_no_address(tmp_path: Path) -> None:
    done = conveyor("serve", cwd=tmp_path,
                    env=serve_env(generate_private_key()[0], HOST="999.1.1.1", PORT="3999"))
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith("conveyor: HOST '999.1.1.1' is not an address to listen on: "), line
    assert "listening" not in done.stderr


def test_serve_on_redis_checks_the_trusted_roots_before_it_listens(tmp_path: Path) -> None:
    roots = tmp_path / "roots.jsonl"
    roots.write_text('{"mediaType": "not a trusted root"}\n')
    done = conveyor("serve", cwd=tmp_path, env=serve_env(
        generate_private_key()[0], CONVEYOR_REDIS_URL="redis://127.0.0.1:1/0",
        CONVEYOR_SIGSTORE_TRUST=str(roots)))
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith(f"conveyor: CONVEYOR_SIGSTORE_TRUST {roots}: line 1: "), line
    assert "listening" not in done.stderr


def test_serve_on_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = conveyor("serve", cwd=tmp_path, env=serve_env(
            generate_private_key()[0], HOST="127.0.0.1", PORT=str(port)))
    assert done.returncode == 2
    assert one_line(done) == (f"conveyor: HOST/PORT: cannot listen on 127.0.0.1:{port}: "
                              "Address already in use")


def start_serving(cwd: Path, env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "bot", "serve"], cwd=cwd, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


async def test_serve_answers_healthz_503_while_github_has_not_answered(tmp_path: Path) -> None:
    """The first GitHub call (who am I) hangs: the server listens and says it is starting."""
    held: list[asyncio.StreamWriter] = []
    release = asyncio.Event()

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await release.wait()
        writer.close()

    github = await asyncio.start_server(hold, "127.0.0.1", 0)
    github_port = github.sockets[0].getsockname()[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITHUB_", "CONVEYOR_"))}
    env.update(serve_env(generate_private_key()[0], HOST="127.0.0.1", PORT=str(port),
                         GITHUB_API_URL=f"http://127.0.0.1:{github_port}",
                         CONVEYOR_RESYNC_INTERVAL="0", PYTHONPATH=str(ROOT)))
    log = (tmp_path / "serve.log").open("wb")
    process = start_serving(tmp_path, env, log)
    try:
        statuses: list[int] = []
        async with aiohttp.ClientSession() as session:
            for _ in range(400):
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                        statuses.append(resp.status)
                        body = await resp.json()
                        if resp.status == 503 and held:
                            break
                except aiohttp.ClientConnectionError:
                    pass
                await asyncio.sleep(0.05)
            assert statuses and statuses[-1] == 503, statuses
            assert body["status"] == "starting"
            release.set()  # GitHub hangs up: the bot logs it and is ready
            for _ in range(400):
                async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                    if resp.status == 200:
                        ready = await resp.json()
                        rendering = ready["rendering"]
                        break
                await asyncio.sleep(0.05)
            assert resp.status == 200
    finally:
        process.terminate()
        process.wait(20)
        log.close()
        github.close()
        await github.wait_closed()
    records = [json.loads(line) for line in (tmp_path / "serve.log").read_text().splitlines()
               if line.startswith("{")]
    messages = [record["message"] for record in records]
    assert messages[0] == "conveyor listening", messages
    assert records[0]["rendering"] == rendering
    # no CONVEYOR_SIGSTORE_TRUST: Sigstore's and GitHub's roots through TUF (not reachable
    # here: what is missing is said, never a crash)
    assert records[0]["sigstore_roots"] == "TUF: Sigstore public-good and GitHub"
    assert ready["sigstore"]["source"] == "TUF"
    assert ready["sigstore"]["roots"] == {} and ready["sigstore"]["problem"]
    tool = find_kustomize(None)
    assert rendering == (f"on ({tool.describe()})" if tool else
                         "off (no kustomize: Kustomize environments are judged file by file)")
    assert "could not read the app's identity yet" in messages
