"""The periodic resync run by three replicas sharing one Redis, against one replica alone.

Each replica is a full in-process app (`create_app` with `CONVEYOR_REDIS_URL`) on the same
emulator world; all three start their resync at the same moment, as their timers would after a
rolling restart. The lease per installation (`bot/redisq/locks.py`) lets one of them do it.
Counted: the installation's requests (what its rate limit pays). A real `redis-server` from
PATH runs in a temp dir; without one the row says so.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping

from aiohttp import web

from bot.promotion.resync.reconcile import resync_all
from bot.serving.composition import Overrides
from bot.serving.server import Conveyor, conveyor_of, create_app

from .wiring import bot_settings, free_port, start_stage


async def replicas_resync(files: Mapping[str, str]) -> tuple[int, int] | None:
    """(requests of one replica's cold resync, of three replicas' at once), or None."""
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    one = await _resync_by(files, 1, binary)
    three = await _resync_by(files, 3, binary)
    return one, three


async def _resync_by(files: Mapping[str, str], replicas: int, binary: str) -> int:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="conveyor-bench-redis-")
    redis = subprocess.Popen(  # noqa: ASYNC220 - a server started once, not awaited
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir, "--save", "",
         "--appendonly", "no", "--protected-mode", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stage = await start_stage(files=files)
    apps: list[Conveyor] = []
    runners: list[web.AppRunner] = []
    try:
        await _listening(port)
        for _ in range(replicas):
            settings = bot_settings(stage, redis_url=f"redis://127.0.0.1:{port}/0", workers=2)
            app = create_app(settings, Overrides(clock=stage.clock))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            runners.append(runner)
            apps.append(conveyor_of(app))
        stage.emulator.reset_counters()
        await asyncio.gather(*(resync_all(r.capabilities.resync, keep_for=60) for r in apps))
        for replica in apps:
            await replica.pool.wait_idle()
        return sum(1 for e in stage.emulator.requests.entries if e.installation_id is not None)
    finally:
        for runner in runners:
            await runner.cleanup()
        await stage.stop()
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


async def _listening(port: int, within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        await asyncio.sleep(0.02)
    raise RuntimeError("redis-server did not start")
