"""`python -m bot report` as a real process against the emulator over HTTP: the figures it
prints, and the one line (exit 2 for the repository, 1 for GitHub or a server that is not
GitHub) when it cannot print them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.names import POLICY_PATH
from bot.sandbox.demo import DEPLOY_REPO, seed
from conveyor_emulator import Emulator
from tests.botprocess import REPO_ROOT, free_port
from tests.harness import SECRET


@dataclass
class Done:
    code: int
    out: str
    err: str


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    em = Emulator(webhook_secret=SECRET)
    await em.start()
    seed(em)
    em.add_repo("other/deploy", files={"README.md": "# not installed\n"})
    try:
        yield em
    finally:
        await em.stop()


async def report(emulator: Emulator, tmp_path: Path, *args: str,
                 api_url: str | None = None) -> Done:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GITHUB_", "CONVEYOR_"))}
    env.update(PYTHONPATH=str(REPO_ROOT), GITHUB_APP_ID=str(emulator.app_id),
               GITHUB_WEBHOOK_SECRET=SECRET,
               GITHUB_PRIVATE_KEY=emulator.app_private_key_pem.replace("\n", "\\n"))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "report", *args, "--api-url", api_url or emulator.base_url,
        cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return Done(process.returncode, out.decode(), err.decode())


async def test_the_figures_of_a_repository_without_deployments(emulator: Emulator,
                                                                tmp_path: Path) -> None:
    done = await report(emulator, tmp_path, "--repo", DEPLOY_REPO, "--since", "7d")
    assert (done.code, done.err) == (0, "")
    lines = done.out.splitlines()
    assert lines[0].startswith(f"Delivery of {DEPLOY_REPO} from ")
    assert lines[4:] == [
        "| web | staging | 0 | 0.0 | — | — | — | — |",
        "| web | production | 0 | 0.0 | — | — | — | — |",
        "| api | staging | 0 | 0.0 | — | — | — | — |",
        "| api | production | 0 | 0.0 | — | — | — | — |",
    ]
    as_json = await report(emulator, tmp_path, "--repo", DEPLOY_REPO, "--format", "json")
    assert as_json.code == 0
    data = json.loads(as_json.out)
    assert data["repository"] == DEPLOY_REPO
    assert [(row["service"], row["environment"], row["deployments"])
            for row in data["figures"]] == [("web", "staging", 0), ("web", "production", 0),
                                            ("api", "staging", 0), ("api", "production", 0)]


@pytest.mark.parametrize(("repo", "files", "message"), [
    ("other/deploy", None,
     "conveyor report: other/deploy: the app is not installed on it (or it does not exist)"),
    ("acme/web", None, f"conveyor report: acme/web: no {POLICY_PATH} on main"),
    (DEPLOY_REPO, {POLICY_PATH: "version: 1\nservices: []\n"},
     f"conveyor report: {DEPLOY_REPO}: {POLICY_PATH} is invalid (line 1: "),
])
async def test_a_repository_that_cannot_be_reported(
        emulator: Emulator, tmp_path: Path, repo: str, files: dict[str, str] | None,
        message: str) -> None:
    if files is not None:
        await emulator.push_files(repo, files)
    done = await report(emulator, tmp_path, "--repo", repo)
    assert (done.code, done.out) == (2, "")
    assert len(done.err.splitlines()) == 1 and done.err.startswith(message), done.err


async def test_github_unreachable(emulator: Emulator, tmp_path: Path) -> None:
    api_url = f"http://127.0.0.1:{free_port()}"
    done = await report(emulator, tmp_path, "--repo", DEPLOY_REPO, api_url=api_url)
    assert (done.code, done.out) == (1, "")
    # one line: the retries before it are not printed
    assert done.err == (f"conveyor report: cannot reach GitHub: GET {api_url}/app failed: "
                        "ClientConnectorError\n")


@pytest.mark.parametrize(("status", "content_type", "body", "answered"), [
    (200, "text/html", "<html>a web page</html>", "something other than the app's JSON"),
    (404, "text/html", "<html>not found</html>", "404 Not Found without JSON"),
    (200, "text/plain", "ok", "something other than the app's JSON"),
    (200, "application/json", "{not json", "something other than the app's JSON"),
    (200, "application/json", '{"id": 1}', "something other than the app's JSON"),
    (200, "application/json", "[]", "something other than the app's JSON"),
])
async def test_a_server_that_is_not_github(emulator: Emulator, tmp_path: Path, status: int,
                                           content_type: str, body: str, answered: str) -> None:
    """A web server at --api-url (GitHub Enterprise Server's web UI instead of its /api/v3)."""
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    async def answer(_request: web.Request) -> web.Response:
        return web.Response(status=status, body=body.encode(),
                            headers={"Content-Type": content_type})

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", answer)
    server = TestServer(app)
    await server.start_server()
    try:
        api_url = str(server.make_url("")).rstrip("/")
        done = await report(emulator, tmp_path, "--repo", DEPLOY_REPO, api_url=api_url)
    finally:
        await server.close()
    assert (done.code, done.out) == (1, "")
    assert done.err == (f"conveyor report: {api_url} does not answer as GitHub's REST API: "
                        f"GET /app answered {answered} (GitHub Enterprise Server's is "
                        "https://HOST/api/v3)\n")


async def test_githubs_own_refusal_of_the_app_is_said_as_github_said_it(
        emulator: Emulator, tmp_path: Path) -> None:
    """A 404 in JSON is GitHub's: an app id it does not know."""
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    async def unknown_app(_request: web.Request) -> web.Response:
        return web.json_response({"message": "Integration not found"}, status=404)

    app = web.Application()
    app.router.add_get("/app", unknown_app)
    server = TestServer(app)
    await server.start_server()
    try:
        done = await report(emulator, tmp_path, "--repo", DEPLOY_REPO,
                            api_url=str(server.make_url("")).rstrip("/"))
    finally:
        await server.close()
    assert (done.code, done.out) == (1, "")
    assert done.err == "conveyor report: GitHub answered Integration not found\n"
