"""`python -m bot serve` in memory mode is two processes: the intake answers GitHub, the workers
run the jobs. Real processes, the in-process emulator, deliveries over HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest

from bot.sandbox.demo import seed
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


def test_the_workers_process_is_started_by_serve_only(tmp_path: Path) -> None:
    alone = subprocess.run([sys.executable, "-m", "bot.serving.workers"], cwd=tmp_path,
                           env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT)},
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == 2
    assert alone.stderr == ("conveyor workers: started by `python -m bot serve`, with a "
                            "socket's file descriptor\n")
    unset = subprocess.run([sys.executable, "-m", "bot.serving.workers", "3"], cwd=tmp_path,
                           env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT)},
                           capture_output=True, text=True, timeout=60)
    assert (unset.returncode, unset.stderr) == (2, "conveyor workers: GITHUB_APP_ID is not set\n")


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
