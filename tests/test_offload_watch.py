"""The worker process's watch on the bot: it leaves once the bot's process has ended."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from bot.runtime import offload


class Left(Exception):
    """Raised instead of `os._exit`, so that the watch can be watched in this process."""


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    codes: list[int] = []

    def leave(code: int) -> None:
        codes.append(code)
        raise Left

    monkeypatch.setattr(offload.os, "_exit", leave)
    return codes


def child() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)


def test_a_running_process_is_running_and_an_ended_one_is_not() -> None:
    assert offload._running(os.getpid())
    proc = child()
    assert offload._running(proc.pid)
    proc.kill()
    proc.wait()  # reaped: the pid names no process
    assert not offload._running(proc.pid)


def test_another_users_process_counts_as_running(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(offload.os, "kill", refuse)
    assert offload._running(12345)


def test_the_watch_leaves_at_once_when_the_bot_is_already_gone(exits: list[int]) -> None:
    proc = child()
    proc.kill()
    proc.wait()
    with pytest.raises(Left):
        offload._wait_for_exit(proc.pid)
    assert exits == [0]


def test_without_pidfd_the_watch_polls_until_the_bot_is_gone(
        exits: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(offload.os, "pidfd_open", raising=False)
    answers = iter([True, True, False])
    seen: list[int] = []

    def running(pid: int) -> bool:
        seen.append(pid)
        return next(answers)

    monkeypatch.setattr(offload, "_running", running)
    monkeypatch.setattr(offload.time, "sleep", lambda seconds: None)
    with pytest.raises(Left):
        offload._wait_for_exit(4242)
    assert seen == [4242, 4242, 4242] and exits == [0]


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="Linux pidfd")
def test_the_watch_thread_waits_for_the_bot_then_leaves(
        exits: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    left = threading.Event()
    watched = offload._wait_for_exit

    def wait_then_tell(pid: int) -> None:
        try:
            watched(pid)
        except Left:
            left.set()

    monkeypatch.setattr(offload, "_wait_for_exit", wait_then_tell)
    proc = child()
    before = set(threading.enumerate())
    try:
        offload._leave_with(proc.pid)
        watches = [t for t in set(threading.enumerate()) - before
                   if t.name == "conveyor-bot-watch"]
        stayed = not left.wait(0.2) and exits == []  # the bot still runs: the worker stays
    finally:
        proc.kill()
        proc.wait()
        # Joined before the fixture restores os._exit, whatever happened above.
        for watch in threading.enumerate():
            if watch.name == "conveyor-bot-watch":
                watch.join(10)
    assert stayed and [w.daemon for w in watches] == [True]
    assert left.is_set() and exits == [0]
