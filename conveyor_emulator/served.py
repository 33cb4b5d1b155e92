"""The emulator served on loopback: the REST API, the control API, the web views and the
registry of one `EmulatorCore`, and its webhook sender."""

from __future__ import annotations

import asyncio
import contextlib
import shutil

from aiohttp import web

from conveyor_emulator.app import build_app
from conveyor_emulator.driver.core import EmulatorCore


class Emulator(EmulatorCore):
    """A stateful GitHub REST API and webhook sender on loopback."""

    _runner: web.AppRunner | None = None
    _watching: asyncio.Task[None] | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = build_app(self)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        addresses = self._runner.addresses
        actual = addresses[0][1] if addresses else port
        self.world.web_url = f"http://{host}:{actual}"
        self.base_url = f"{self.world.web_url}/api/v3"
        self.world.api_url = self.base_url
        await self.hooks.start()
        self._watching = asyncio.create_task(self.stalls.watch())
        return self.base_url

    async def stop(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watching
            self._watching = None
        await self.hooks.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._trust_dir is not None:
            shutil.rmtree(self._trust_dir, ignore_errors=True)
            self._trust_dir = None
