from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import jwt
import pytest
from aiohttp import web
from gidgethub.aiohttp import GitHubAPI

from conveyor_emulator import Emulator

SECRET = "emulator-test-secret"


@dataclass
class Receiver:
    """A tiny webhook receiver standing in for the bot."""

    url: str = ""
    received: list[tuple[dict[str, str], dict[str, Any], bytes]] = field(default_factory=list)
    status: int = 202

    def events(self, name: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        out = [(h["X-GitHub-Event"], p) for h, p, _ in self.received]
        return [e for e in out if name is None or e[0] == name]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        rec.received.append((dict(request.headers), json.loads(body), body))
        return web.Response(status=rec.status)

    app = web.Application()
    app.router.add_post("/api/github/webhooks", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    rec.url = f"http://127.0.0.1:{port}/api/github/webhooks"
    yield rec
    await runner.cleanup()


@pytest.fixture
async def emulator(receiver: Receiver) -> AsyncIterator[Emulator]:
    em = Emulator(webhook_secret=SECRET, webhook_url=receiver.url, validate_openapi=True,
                  seed=7)
    await em.start()
    em.add_org("acme")
    em.add_user("alice", name="Alice")
    em.add_user("bob")
    em.add_repo("acme/deploy", files={
        ".github/conveyor.yml": "version: 1\n",
        "apps/web/overlays/staging/kustomization.yaml": "images:\n- name: web\n  newTag: 1.0.0\n",
        "README.md": "hello\n",
    })
    em.add_repo("acme/web", files={"main.go": "package main\n"})
    em.add_repo("acme/other", files={"x": "y\n"})
    em.set_permission("acme/deploy", "alice", "write")
    yield em
    await em.stop()


def app_jwt(em: Emulator, *, iss: Any = None, iat_offset: int = -30, exp_offset: int = 540,
            key: str | None = None) -> str:
    now = int(time.time())
    payload = {"iat": now + iat_offset, "exp": now + exp_offset,
               "iss": str(em.world.app_id) if iss is None else iss}
    return jwt.encode(payload, key or em.app_private_key_pem, algorithm="RS256")


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def token_for(em: Emulator, session: aiohttp.ClientSession, installation_id: int,
                    **body: Any) -> str:
    gh = GitHubAPI(session, "test", base_url=em.base_url)
    data = await gh.post(f"/app/installations/{installation_id}/access_tokens", data=body,
                         jwt=app_jwt(em))
    token: str = data["token"]
    return token


@pytest.fixture
async def gh(emulator: Emulator, session: aiohttp.ClientSession) -> GitHubAPI:
    inst = emulator.install("acme")
    token = await token_for(emulator, session, inst)
    return GitHubAPI(session, "conveyor-tests", oauth_token=token, base_url=emulator.base_url)
