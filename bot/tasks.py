"""Background loops of the server process."""

from __future__ import annotations

import asyncio

from .server import Runtime


def background_tasks(runtime: Runtime) -> list[asyncio.Task[None]]:
    return []
