from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.harness import World, close_world, make_world
from tests.render_tools import ensure_render_tools

_RENDER_TOOLS: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """The suite renders with a real Helm 4 and kustomize v5.8+: where the machine has no
    helm, the pinned ones are fetched first (`tests/render_tools.py`)."""
    done = ensure_render_tools()
    if done is not None:
        _RENDER_TOOLS.append(done)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _RENDER_TOOLS


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await make_world()
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations
