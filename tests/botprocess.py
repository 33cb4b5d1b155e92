"""`python -m bot serve` as a real subprocess against the in-process emulator."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import aiohttp

from bot.sandbox.stack import free_port, serve_environment, wait_healthy
from conveyor_emulator import Emulator
from tests.harness import SECRET

REPO_ROOT = Path(__file__).resolve().parents[1]


def coverage_env() -> dict[str, str]:
    """The variables with which a measured test run (`coverage run`) measures the processes it
    starts too; empty otherwise."""
    return {key: value for key, value in os.environ.items() if key.startswith("COVERAGE_")}


class BotProcess:
    """The bot configured by environment variables only (the working directory has no `.env`)."""

    def __init__(self, emulator: Emulator, workdir: Path, name: str, *,
                 resync: float = 0, extra_env: Mapping[str, str] | None = None,
                 python_args: Sequence[str] = ("-m", "bot", "serve")) -> None:
        self.name = name
        self.port = free_port()
        self.log_path = workdir / f"{name}.log"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO_ROOT),
            **coverage_env(),
            **serve_environment(
                emulator, SECRET, self.port,
                GITHUB_PRIVATE_KEY=emulator.app_private_key_pem.replace("\n", "\\n"),
                **{"CONVEYOR_RESYNC_INTERVAL": str(resync), "LOG_LEVEL": "INFO",
                   **(extra_env or {})}),
        }
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, *python_args], cwd=workdir, env=env,
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def webhook_url(self) -> str:
        return f"{self.base_url}/api/github/webhooks"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_healthy(self, within: float = 20) -> None:
        if not await wait_healthy(self.base_url, lambda: self.process.poll() is None, within):
            raise AssertionError(f"bot {self.name} did not start: {self.log()}")

    async def metrics(self) -> str:
        async with aiohttp.ClientSession() as session, \
                session.get(f"{self.base_url}/metrics") as resp:
            return await resp.text()

    def kill(self) -> None:
        """Every process of the bot at once, as when its container is killed."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self._close_log()

    def stop(self, within: float = 15) -> int | None:
        """SIGTERM; SIGKILL after `within` seconds. The exit code, or None when killed."""
        code: int | None = None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                code = self.process.wait(within)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        else:
            code = self.process.returncode
        self._close_log()
        return code

    async def stop_async(self, within: float = 15) -> int | None:
        """`stop` without blocking the loop (the emulator runs on it, and the draining bot may
        still be talking to it)."""
        return await asyncio.to_thread(self.stop, within)

    def _close_log(self) -> None:
        if not self._log.closed:
            self._log.close()
