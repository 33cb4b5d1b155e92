"""A real `redis-server` on a random loopback port, and bot processes that share it."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from bot.sandbox.emulator import Emulator
from tests.harness import SECRET

REPO_ROOT = Path(__file__).resolve().parents[2]
REDIS_MISSING = "redis-server not installed (CI installs it)"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_binary() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    """One server in a temp dir; `stop` and `start` again keep its data (append-only file)."""

    def __init__(self, workdir: Path) -> None:
        binary = redis_binary()
        assert binary is not None
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
             str(self.workdir), "--save", "", "--appendonly", "yes", "--appendfsync", "always",
             "--protected-mode", "no", "--daemonize", "no", "--logfile", "redis.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            assert self.process.poll() is None, (self.workdir / "redis.log").read_text()
            time.sleep(0.02)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None


class BotProcess:
    """`python -m bot serve` with CONVEYOR_REDIS_URL, against the in-process emulator."""

    def __init__(self, emulator: Emulator, workdir: Path, name: str, redis_url: str, *,
                 claim_timeout: float = 30, workers: int = 4, resync: int = 0) -> None:
        self.name = name
        self.port = free_port()
        self.log_path = workdir / f"{name}.log"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO_ROOT),
            "GITHUB_APP_ID": str(emulator.app_id),
            "GITHUB_PRIVATE_KEY": emulator.app_private_key_pem.replace("\n", "\\n"),
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": emulator.base_url,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "CONVEYOR_RESYNC_INTERVAL": str(resync),
            "CONVEYOR_WORKERS": str(workers),
            "CONVEYOR_REDIS_URL": redis_url,
            "CONVEYOR_REDIS_CLAIM_TIMEOUT": str(claim_timeout),
            "LOG_LEVEL": "INFO",
        }
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"], cwd=workdir, env=env,
            stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def webhook_url(self) -> str:
        return f"{self.base_url}/api/github/webhooks"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def wait_healthy(self, within: float = 20) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        async with aiohttp.ClientSession() as session:
            while loop.time() < deadline:
                assert self.process.poll() is None, self.log()
                try:
                    async with session.get(f"{self.base_url}/healthz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
        raise AssertionError(f"bot {self.name} did not start: {self.log()}")

    async def metrics(self) -> str:
        async with aiohttp.ClientSession() as session, \
                session.get(f"{self.base_url}/metrics") as resp:
            return await resp.text()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if not self._log.closed:
            self._log.close()
