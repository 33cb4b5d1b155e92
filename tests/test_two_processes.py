"""`python -m bot serve` in memory mode is two processes: the intake answers GitHub, the workers
run the jobs. Real processes, the in-process emulator, deliveries over HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest

from bot.sandbox.demo import seed
from bot.serving.fork import WorkersProcess
from conveyor_emulator import Emulator
from tests.botprocess import REPO_ROOT, BotProcess
from tests.harness import SECRET


@pytest.fixture
async def emulator() -> AsyncIterator[tuple[Emulator, int]]:
    em = Emulator(webhook_secret=SECRET)
    await em.start()
    demo = seed(em)
    yield em, demo.installation_id
    await em.stop()


def workers_pid(bot: BotProcess) -> int:
    for line in bot.log().splitlines():
        if line.startswith("{") and json.loads(line)["message"] == "workers process started":
            return int(json.loads(line)["pid"])
    raise AssertionError(f"no workers process: {bot.log()}")


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state


async def until(condition: Callable[[], bool], within: float = 15) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.05)
    return False


async def deliver(session: aiohttp.ClientSession, bot: BotProcess, delivery_id: str,
                  installation_id: int) -> int:
    body = json.dumps({"action": "released", "release": {"tag_name": "v9.9.9"},
                       "repository": {"full_name": "acme/docs"},
                       "installation": {"id": installation_id}}).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "release",
               "X-GitHub-Delivery": delivery_id, "X-Hub-Signature-256": signature}
    async with session.post(bot.webhook_url, data=body, headers=headers) as response:
        return response.status


async def health(session: aiohttp.ClientSession, bot: BotProcess) -> dict[str, object]:
    async with session.get(f"{bot.base_url}/healthz") as response:
        body: dict[str, object] = await response.json()
        return body


async def taken(session: aiohttp.ClientSession, bot: BotProcess) -> bool:
    """Until no accepted job waits: each is in a worker's hands (False after 10 s)."""
    for _ in range(500):
        if (await health(session, bot))["queue_depth"] == 0:
            return True
        await asyncio.sleep(0.02)
    return False


async def test_the_queue_bound_holds_across_the_two_processes(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    """One worker, two places: the first job holds the worker (GitHub answers slowly), two
    more wait, the fourth delivery is refused until there is room; stopping finishes all
    three."""
    em, installation = emulator
    bot = BotProcess(em, tmp_path, "bot", extra_env={"CONVEYOR_WORKERS": "1", "LOG_LEVEL": "DEBUG",
                                                     "CONVEYOR_QUEUE_SIZE": "2"})
    try:
        await bot.wait_healthy()
        assert running(workers_pid(bot)) and workers_pid(bot) != bot.process.pid
        em.faults.latency = 2.0
        async with aiohttp.ClientSession() as session:
            assert await deliver(session, bot, "d-1", installation) == 202
            assert await taken(session, bot)
            statuses = [await deliver(session, bot, f"d-{n}", installation) for n in (2, 3, 4)]
            assert statuses == [202, 202, 503]
            assert (await health(session, bot))["queue_depth"] == 2
            metrics = await bot.metrics()
        assert 'conveyor_deliveries_total{event="release",outcome="queue_full"} 1.0' in metrics
        for family in ("conveyor_deliveries_total", "conveyor_github_requests_total",
                       "conveyor_queue_depth"):
            assert metrics.count(f"# TYPE {family} ") == 1, family
        em.faults.latency = 0.0
        assert await bot.stop_async(within=30) == 0
        log = bot.log()
        assert "in-flight work did not finish" not in log, log
        finished = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        ids = {r.get("delivery_id") for r in finished
               if r["message"] == "no service is fed by this repository"}
        assert {"d-1", "d-2", "d-3"} <= ids and "d-4" not in ids, log
    finally:
        bot.stop()


async def test_when_the_workers_process_dies_the_intake_stops_with_it(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    em, _installation = emulator
    bot = BotProcess(em, tmp_path, "bot")
    try:
        await bot.wait_healthy()
        os.kill(workers_pid(bot), signal.SIGKILL)
        assert await until(lambda: bot.process.poll() is not None), bot.log()
        assert bot.process.returncode == 1
        assert "the workers process ended; stopping" in bot.log()
    finally:
        bot.stop()


async def test_the_workers_process_outlives_a_killed_intake_only_to_finish(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    """SIGKILL of the intake alone (not of the container): its socket closes, and the workers
    finish what they hold and exit instead of running on, orphaned."""
    em, installation = emulator
    bot = BotProcess(em, tmp_path, "bot", extra_env={"LOG_LEVEL": "DEBUG"})
    try:
        await bot.wait_healthy()
        pid = workers_pid(bot)
        em.faults.latency = 0.5
        async with aiohttp.ClientSession() as session:
            assert await deliver(session, bot, "d-1", installation) == 202
            assert await taken(session, bot)  # in a worker, waiting for GitHub's answer
        bot.process.send_signal(signal.SIGKILL)
        bot.process.wait(10)
        assert await until(lambda: not running(pid), within=20), bot.log()
        records = [json.loads(line) for line in bot.log().splitlines() if line.startswith("{")]
        assert any(r.get("delivery_id") == "d-1" for r in records), bot.log()
    finally:
        bot.stop()


async def test_a_frozen_workers_process_delays_no_answer_and_fails_the_health_check(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    """The workers process stopped (SIGSTOP) stands for one busy for seconds: deliveries are
    still answered 202 at once, `/healthz` says the workers do not answer, and once they run
    again the deliveries are processed."""
    em, installation = emulator
    bot = BotProcess(em, tmp_path, "bot", extra_env={"LOG_LEVEL": "DEBUG"})
    try:
        await bot.wait_healthy()
        pid = workers_pid(bot)
        os.kill(pid, signal.SIGSTOP)
        try:
            async with aiohttp.ClientSession() as session:
                statuses = [await deliver(session, bot, f"d-{n}", installation)
                            for n in range(5)]
                async with session.get(f"{bot.base_url}/healthz") as response:
                    assert response.status == 503
                    assert (await response.json())["status"] == "workers not answering"
                async with session.get(f"{bot.base_url}/metrics") as response:
                    assert response.status == 503
                    assert "conveyor_deliveries_total" in await response.text()
        finally:
            os.kill(pid, signal.SIGCONT)
        assert statuses == [202] * 5
        await bot.wait_healthy()

        def processed() -> set[str]:
            return {json.loads(line).get("delivery_id") for line in bot.log().splitlines()
                    if "no service is fed by this repository" in line}

        assert await until(lambda: {f"d-{n}" for n in range(5)} <= processed()), bot.log()
    finally:
        await bot.stop_async()


async def test_the_workers_process_is_a_fork_of_the_intake_that_holds_no_listening_socket(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    """Forked, it runs at the lowest priority, ignores the signals the intake takes, and has
    closed the socket GitHub delivers to: a workers process outliving the intake does not keep
    the port taken."""
    em, _installation = emulator
    bot = BotProcess(em, tmp_path, "bot")
    try:
        await bot.wait_healthy()
        pid, intake = workers_pid(bot), bot.process.pid
        status = status_fields(pid)
        assert status["PPid"] == str(intake)
        ignored = int(status["SigIgn"], 16)
        assert [ignored >> (taken - 1) & 1 for taken in (signal.SIGINT, signal.SIGTERM)] == [1, 1]
        assert os.getpriority(os.PRIO_PROCESS, pid) == \
            min(19, os.getpriority(os.PRIO_PROCESS, intake) + 19)
        listening = listening_inode(bot.port)
        assert listening in socket_inodes(intake)
        assert listening not in socket_inodes(pid)
    finally:
        await bot.stop_async()


def status_fields(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def listening_inode(port: int) -> str:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # LISTEN
            return fields[9]
    raise AssertionError(f"nothing listens on {port}")


def socket_inodes(pid: int) -> set[str]:
    links = (os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}


FORK_PROBE = """
import json, os, sys, threading
fork = os.fork
def probed() -> int:
    print(json.dumps({"threads": threading.active_count(),
                      "tasks": len(os.listdir("/proc/self/task"))}), flush=True)
    return fork()
os.fork = probed
from bot.__main__ import main
sys.exit(main(["serve"]))
"""


async def test_the_intake_forks_the_workers_while_it_has_one_thread(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    """A fork copies only the thread that calls it: a lock another thread held stays held in
    the child forever."""
    em, _installation = emulator
    bot = BotProcess(em, tmp_path, "bot", python_args=("-c", FORK_PROBE))
    try:
        await bot.wait_healthy()
        probes = [json.loads(line) for line in bot.log().splitlines()
                  if line.startswith('{"threads"')]
        assert probes == [{"threads": 1, "tasks": 1}], bot.log()
    finally:
        await bot.stop_async()


def sleeping_child() -> int:
    return os.posix_spawn(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)"],
                          os.environ)


def reaped(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "waiting-thread"])
async def test_the_intake_reaps_the_workers_process_and_keeps_its_exit_code(
        pidfd: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not pidfd:  # a system without pidfd_open (not Linux): a thread waits for the child
        monkeypatch.delattr(os, "pidfd_open")
    pid = sleeping_child()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        process = WorkersProcess(pid, ours)
        process.watch()
        process.kill()
        assert await asyncio.wait_for(process.wait(), 10) == -signal.SIGKILL
        assert reaped(pid)  # not left a zombie
        process.kill()  # ended: no signal goes to whatever has the pid now


def test_the_intake_process_loads_no_handler_and_no_client() -> None:
    """What the intake holds in memory: the answer's code, not the work's."""
    loaded = subprocess.run(
        [sys.executable, "-c",
         "import sys, bot.serving.serve; print(' '.join(sorted(sys.modules)))"],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert "bot.serving.front" in loaded
    heavy = ("bot.handlers", "bot.serving.server", "bot.promotion", "bot.github", "bot.manifests",
             "ruamel", "bot.attestations.roots", "bot.attestations.trust.", "sigstore", "tuf",
             "cryptography", "pydantic", "requests")
    assert [name for name in loaded if name.startswith(heavy) or name == "bot.attestations.trust"] \
        == []


async def test_serve_exits_2_naming_a_trust_file_whose_roots_cannot_be_used(
        emulator: tuple[Emulator, int], tmp_path: Path) -> None:
    """The intake reads CONVEYOR_SIGSTORE_TRUST without checking its roots (that would load the
    Sigstore libraries into it); the workers process checks them at start and refuses."""
    em, _installation = emulator
    roots = tmp_path / "roots.jsonl"
    roots.write_text('{"mediaType": "not a trusted root"}\n')
    bot = BotProcess(em, tmp_path, "untrusted", extra_env={"CONVEYOR_SIGSTORE_TRUST": str(roots)})
    try:
        code = await asyncio.to_thread(bot.process.wait, 60)
    finally:
        await bot.stop_async()
    assert code == 2, bot.log()
    refusals = [line for line in bot.log().splitlines() if line.startswith("conveyor workers:")]
    assert len(refusals) == 1
    assert refusals[0].startswith(f"conveyor workers: CONVEYOR_SIGSTORE_TRUST {roots}: line 1: ")
