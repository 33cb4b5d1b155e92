from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.harness import World, close_world
from tests.reliability.support import build_world


@pytest.fixture
async def rworld() -> AsyncIterator[World]:
    built = await build_world()
    try:
        yield built
    finally:
        await close_world(built)
