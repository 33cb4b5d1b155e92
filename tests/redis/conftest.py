from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.redis.support import REDIS_MISSING, RedisServer, redis_binary


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if redis_binary() is None:
        pytest.skip(REDIS_MISSING)
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def redis_client(redis_server: RedisServer) -> AsyncIterator[object]:
    from bot.redisq.client import connect

    client = connect(redis_server.url)
    try:
        yield client
    finally:
        await client.aclose()
