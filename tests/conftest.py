from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.harness import World, close_world, make_world


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await make_world()
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations
