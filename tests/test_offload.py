"""CPU-heavy work where it costs the event loop least: inline, a thread, another process."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from bot.configcheck.files import check_file
from bot.domain.policy import load_policy
from bot.manifests import ImageNotFoundError, ManifestError, promote_image
from bot.runtime import offload
from bot.sandbox.demo import DEMO_POLICY, digest_of

DIGEST = digest_of("web:2.0.0")


def where() -> tuple[int, str]:
    return os.getpid(), threading.current_thread().name


def manifest(documents: int) -> str:
    return "---\n".join(
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{n}\nspec:\n"
        f"  template:\n    spec:\n      containers:\n        - name: app\n"
        f"          image: ghcr.io/acme/{'web' if n == documents // 2 else f'svc-{n}'}:1.0.0\n"
        for n in range(documents))


@pytest.fixture(autouse=True)
def _stop_pool() -> object:
    yield None
    offload.shutdown()


async def test_small_inputs_run_inline_larger_in_a_thread_very_large_in_a_process() -> None:
    me = where()
    assert await offload.run_cpu(10, where) == me
    pid, thread = await offload.run_cpu(offload.INLINE_BELOW, where)
    assert pid == me[0] and thread != me[1]
    pid, _ = await offload.run_cpu(offload.PROCESS_FROM, where)
    assert pid != me[0]


async def test_threads_only_keeps_very_large_inputs_in_this_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers process of `serve` answers no webhook: a thread will do, no process."""
    monkeypatch.setattr(offload, "_processes", True)
    offload.threads_only()
    me = where()
    pid, thread = await offload.run_cpu(offload.PROCESS_FROM * 10, where)
    assert pid == me[0] and thread != me[1]
    assert offload._pool is None


async def test_a_large_edit_in_another_process_gives_the_same_edit() -> None:
    text = manifest(600)
    assert len(text) >= offload.PROCESS_FROM
    local = promote_image(text, image="ghcr.io/acme/web", tag="2.0.0", digest=DIGEST,
                          path="apps/all.yaml")
    remote = await offload.run_cpu(len(text), promote_image, text, image="ghcr.io/acme/web",
                                   tag="2.0.0", digest=DIGEST, path="apps/all.yaml")
    assert remote == local and remote.changed


async def test_editor_errors_cross_the_process_boundary_intact() -> None:
    text = manifest(600)
    with pytest.raises(ImageNotFoundError) as raised:
        await offload.run_cpu(len(text), promote_image, text, image="ghcr.io/acme/nope",
                              tag="2.0.0", digest=DIGEST, path="apps/all.yaml")
    assert isinstance(raised.value, ManifestError)
    assert raised.value.path == "apps/all.yaml" and str(raised.value).startswith("apps/all.yaml:")


async def test_the_event_loop_keeps_running_during_a_large_edit() -> None:
    text = manifest(600)
    await offload.run_cpu(offload.PROCESS_FROM, where)  # the worker process is up
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    ticker = asyncio.create_task(tick())
    await offload.run_cpu(len(text), promote_image, text, image="ghcr.io/acme/web",
                          tag="2.0.0", digest=DIGEST, path="apps/all.yaml")
    ticker.cancel()
    assert ticks > 0


async def test_a_policy_and_a_config_check_cross_the_process_boundary() -> None:
    policy = load_policy(DEMO_POLICY)
    big = DEMO_POLICY + "".join(f"# {'padding ' * 12}{n}\n" for n in range(700))
    assert len(big) >= offload.PROCESS_FROM
    assert await offload.run_cpu(len(big), load_policy, big) == load_policy(big)
    text = manifest(600).replace("svc-", "web-")  # images outside allowed_images: findings
    path = "apps/web/overlays/staging/all.yaml"
    local = check_file("1.31", policy, path, text)
    remote = await offload.run_cpu(len(text), check_file, "1.31", policy, path, text)
    assert remote == local and local[0].findings and local[1]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
async def test_the_worker_process_leaves_when_the_bot_is_killed(tmp_path: Path) -> None:
    # A bot killed without a shutdown (SIGKILL, OOM) must not leave its worker behind: it
    # would wait on its queue forever, and its forkserver with it.
    written = tmp_path / "worker.pid"
    script = ("import pathlib, sys\n"
              "from bot.runtime import offload\n"
              "pathlib.Path(sys.argv[1]).write_text(str(offload.start()))\n"
              "sys.stdin.read()\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, str(written), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    for _ in range(600):
        if written.exists() and written.read_text():
            break
        await asyncio.sleep(0.05)
    worker = int(written.read_text())
    assert worker != proc.pid and _alive(worker)
    proc.kill()
    await proc.wait()
    for _ in range(200):
        if not _alive(worker):
            break
        await asyncio.sleep(0.05)
    alive = _alive(worker)
    if alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive


async def test_the_worker_process_runs_at_a_lower_cpu_priority() -> None:
    mine = os.nice(0)
    theirs = await asyncio.get_running_loop().run_in_executor(
        offload._process_pool(), os.nice, 0)
    assert theirs == min(19, mine + offload.WORKER_NICENESS)
