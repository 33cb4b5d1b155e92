"""How `python -m bot serve` in memory mode starts its workers process: a fork of the intake
process, made in `run_server` before the intake's event loop or any thread exists.

The two share, copy-on-write, the interpreter and every module imported until the fork
(aiohttp, yarl, multidict, gidgethub, the settings, the runtime): PSS counts a page once
between them until one of them writes to it, where two interpreters started apart each held
their own. What was made before the fork is collected and frozen first: a collection walking
it would write to every page it lies on, in both processes. The modules only the workers use
are imported after the fork: imported before, the pages the workers then write to would be
held twice, the intake's copy never used.

The child closes the listening socket and the intake's end of the socket pair, ignores the
signals (the intake's to take), imports `bot.serving.workers` and runs it on its end of the
pair. It never returns into the intake's code: it leaves by `os._exit`, with the workers' exit
code (2 when they refuse the settings, 1 on an error).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import socket
import sys
import traceback
from collections.abc import Iterable
from typing import NoReturn

from bot.runtime.settings import Settings

TAKEN_BY_INTAKE = (signal.SIGINT, signal.SIGTERM)


class WorkersProcess:
    """The intake's handle on the forked workers process: its pid and the intake's end of the
    socket pair. Once `watch` is called, the intake's event loop reaps the child when it ends:
    on Linux when its pidfd turns readable, elsewhere from a thread that waits for it (started
    after the fork, so the fork itself still happens with one thread)."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.returncode: int | None = None
        self._pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        self._ended = asyncio.Event()

    def watch(self) -> None:
        loop = asyncio.get_running_loop()
        if self._pidfd is not None:
            loop.add_reader(self._pidfd, self._reap)
            return
        waiting = loop.run_in_executor(None, os.waitpid, self.pid, 0)
        waiting.add_done_callback(lambda done: self._ended_with(done.result()[1]))

    def _reap(self) -> None:
        assert self._pidfd is not None
        asyncio.get_running_loop().remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._ended_with(os.waitpid(self.pid, 0)[1])

    def _ended_with(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        self._ended.set()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:  # not reaped: the pid is still the child's
            os.kill(self.pid, signal.SIGKILL)


def fork_workers(settings: Settings, listening: socket.socket) -> WorkersProcess:
    ours, theirs = socket.socketpair()
    gc.collect()
    gc.freeze()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # blocked across the fork: the child ignores them before a Ctrl-C could end it on the way
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, TAKEN_BY_INTAKE)
    pid = os.fork()
    if pid == 0:
        _become_workers(settings, theirs, closing=(listening, ours), mask=mask)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    theirs.close()
    return WorkersProcess(pid, ours)


def _become_workers(settings: Settings, sock: socket.socket, *,
                    closing: Iterable[socket.socket], mask: Iterable[int]) -> NoReturn:
    code = 1
    try:
        for taken in TAKEN_BY_INTAKE:
            signal.signal(taken, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for other in closing:
            other.close()
        from bot.serving.workers import run_workers

        code = run_workers(settings, sock)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
