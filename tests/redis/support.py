"""A real `redis-server` on a random loopback port, and bot processes that share it."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from bot.sandbox.stack import free_port
from conveyor_emulator import Emulator
from tests.botprocess import BotProcess

REDIS_MISSING = "redis-server not installed (CI installs it)"


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

    def kill(self) -> None:
        """SIGKILL: what was acknowledged survives only as far as the append-only file has it
        (this server fsyncs it on every write)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None


def redis_bot(emulator: Emulator, workdir: Path, name: str, redis_url: str, *,
              claim_timeout: float = 30, workers: int = 4, resync: int = 0) -> BotProcess:
    """`python -m bot serve` with CONVEYOR_REDIS_URL, against the in-process emulator."""
    return BotProcess(emulator, workdir, name, resync=resync, extra_env={
        "CONVEYOR_WORKERS": str(workers),
        "CONVEYOR_REDIS_URL": redis_url,
        "CONVEYOR_REDIS_CLAIM_TIMEOUT": str(claim_timeout),
    })
