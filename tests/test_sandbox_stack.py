"""The sandbox's plumbing: image names split as the registry reads them, and the wait for a
bot's `/healthz` over real HTTP on loopback."""

from __future__ import annotations

import pytest
from aiohttp import web

from bot.sandbox.stack import SandboxError, free_port, image_parts, serve, wait_healthy


def test_image_names_split_into_registry_owner_and_package() -> None:
    assert image_parts("ghcr.io/acme/web") == ("ghcr.io", "acme", "web")
    assert image_parts("ghcr.io/acme/tools/lint") == ("ghcr.io", "acme", "tools/lint")
    assert image_parts("nginx") == ("docker.io", "library", "nginx")


def test_an_image_without_an_owner_or_unreadable_is_a_sandbox_error() -> None:
    with pytest.raises(SandboxError, match=r"^registry\.local:5000/web: expected "
                                           r"REGISTRY/OWNER/NAME$"):
        image_parts("registry.local:5000/web")
    with pytest.raises(SandboxError) as raised:
        image_parts("Not An Image")
    assert str(raised.value).startswith("Not An Image: ")


async def test_the_wait_ends_when_the_bot_answers_200() -> None:
    answers = [503, 503, 200]
    asked: list[str] = []

    async def healthz(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(status=answers[len(asked) - 1])

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    runner, port = await serve(app)
    try:
        assert await wait_healthy(f"http://127.0.0.1:{port}", lambda: True, within=30)
    finally:
        await runner.cleanup()
    assert asked == ["/healthz"] * 3


async def test_the_wait_gives_up_once_the_bot_process_has_ended() -> None:
    polls = 0

    def running() -> bool:
        nonlocal polls
        polls += 1
        return polls <= 3

    # Nothing listens there: each attempt is refused, and the wait goes on while it runs.
    assert not await wait_healthy(f"http://127.0.0.1:{free_port()}", running, within=30)
    assert polls == 4


async def test_the_wait_gives_up_after_its_time() -> None:
    assert not await wait_healthy(f"http://127.0.0.1:{free_port()}", lambda: True, within=0)


async def test_a_server_that_cannot_bind_is_cleaned_up_and_the_error_kept() -> None:
    cleaned: list[str] = []

    async def on_cleanup(app: web.Application) -> None:
        cleaned.append("cleaned")

    app = web.Application()
    app.on_cleanup.append(on_cleanup)
    with pytest.raises(OSError):
        await serve(app, host="192.0.2.1")  # TEST-NET-1: no interface of this machine has it
    assert cleaned == ["cleaned"]
