"""CPU-heavy work off the event loop, so that webhooks are acknowledged while it runs.

Parsing and editing YAML is pure Python. Small inputs run inline: a thread hop costs more than
parsing a thirty-line overlay. Larger ones run in a worker thread, and the event loop gets the
interpreter back at every switch interval. Very large ones (a multi-thousand-line manifest,
whose verified edit is hundreds of milliseconds of parsing) run in a separate process, because
a thread would still hold the interpreter for most of that time. That process runs at a
lower CPU priority than the server, so that where every core is busy the kernel runs the
server, which answers webhooks, before the edit. Where the webhooks are answered by another
process (the workers process of `python -m bot serve`), nothing needs a process of its own:
very large inputs go to a thread too (`threads_only`), and no third process holds memory.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import os
import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

INLINE_BELOW = 4 * 1024  # characters
PROCESS_FROM = 64 * 1024
WORKER_NICENESS = 10  # added to the server's: a share of about a tenth against the server

T = TypeVar("T")
_pool: ProcessPoolExecutor | None = None
_processes = True


def _process_pool() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        # forkserver: a fork of a process running an event loop and threads is unsafe.
        _pool = ProcessPoolExecutor(max_workers=1,
                                    mp_context=multiprocessing.get_context("forkserver"),
                                    initializer=_in_worker, initargs=(os.getpid(),))
    return _pool


def _in_worker(bot: int) -> None:
    """The worker's start: it yields the CPU to the server, and leaves with it."""
    os.nice(WORKER_NICENESS)
    _leave_with(bot)


def _leave_with(bot: int) -> None:
    """Exit once the bot process is gone. A bot killed without a shutdown (SIGKILL, the OOM
    killer) leaves its worker waiting on a queue it holds both ends of."""
    threading.Thread(target=_wait_for_exit, args=(bot,), name="conveyor-bot-watch",
                     daemon=True).start()


def _wait_for_exit(pid: int) -> None:
    try:
        handle = os.pidfd_open(pid)  # Linux: readable once the process has ended
    except (AttributeError, OSError):
        while _running(pid):
            time.sleep(1)
    else:
        select.select([handle], [], [])
    os._exit(0)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


async def run_cpu(size: int, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`func(*args, **kwargs)` for an input of `size` characters, where it costs the event
    loop least. In a process, `func`, its arguments, result and exceptions must pickle."""
    if size < INLINE_BELOW:
        return func(*args, **kwargs)
    call = functools.partial(func, *args, **kwargs)
    if size < PROCESS_FROM or not _processes:
        return await asyncio.to_thread(call)
    return await asyncio.get_running_loop().run_in_executor(_process_pool(), call)


async def run_in_thread(func: Callable[..., T], /, *args: Any) -> T:
    """`func(*args)` in a worker thread: CPU work whose cost does not follow the size of its
    input (verifying a signature bundle: X.509 chains and ECDSA)."""
    return await asyncio.to_thread(func, *args)


def threads_only() -> None:
    """From now on, inputs of any size run inline or in a thread of this process."""
    global _processes
    _processes = False


def start() -> int:
    """Start the worker process now (the server, before it serves): started on first use, its
    launch would block the event loop while a delivery waits for its answer. Returns its pid."""
    return _process_pool().submit(os.getpid).result()


def shutdown() -> None:
    """Stop the worker process, if one was started (server shutdown)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
        _pool = None
