from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.registry.support import MISSING, RegistryServer, registry_binary, skip_or_fail


def _server(root: Path, htpasswd: tuple[str, str] | None = None) -> Iterator[RegistryServer]:
    if registry_binary() is None:
        skip_or_fail(MISSING)
    root.mkdir(parents=True, exist_ok=True)
    server = RegistryServer(root, htpasswd)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[RegistryServer]:
    yield from _server(tmp_path / "public")


@pytest.fixture
def private_registry(tmp_path: Path) -> Iterator[RegistryServer]:
    yield from _server(tmp_path / "private", ("ci-bot", "pull-secret-Xy9"))


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client
