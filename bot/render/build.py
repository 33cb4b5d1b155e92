"""One kustomize build on a private copy of its files: bounded, without network, cached.

The copy holds exactly the files the build's inputs name (`inputs.py`), written below a fresh
folder of mode 0700 that is removed afterwards. kustomize runs with the root-only load
restrictor and none of the flags that enable plugins, exec or container functions or Helm,
in an environment of its own: a home and plugin folder that are empty, and every proxy
variable pointing at a closed local port, so that a fetch it tries anyway fails at once. A
build taking longer than ``timeout`` is killed with its process group; one printing more than
``max_output`` bytes is stopped there. Results are kept by the caller's key (the overlay and
the blob sha of every input file): the same inputs are built once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import re
import shutil
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import cachetools

from bot.render.tool import Kustomize
from bot.render.workloads import Slot, UnreadableBuild, workload_images

BUILD_SECONDS = 30.0
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_ERROR_CHARS = 800
# Nothing listens here: a fetch kustomize tries despite the walk fails without waiting.
CLOSED_PROXY = "http://127.0.0.1:9"


@dataclass(frozen=True)
class BuildResult:
    """The images of every workload of one build, or why there are none."""

    images: Mapping[Slot, str] | None
    error: str | None = None


@dataclass
class Builder:
    """Runs builds with ``tool``, at most ``concurrency`` at once, and keeps their results."""

    tool: Kustomize
    timeout: float = BUILD_SECONDS
    max_output: int = MAX_OUTPUT_BYTES
    concurrency: int = 2
    runs: int = 0  # builds run (not answered from the cache)
    hits: int = 0  # builds answered from the cache
    _cache: cachetools.LRUCache[str, BuildResult] = field(
        default_factory=lambda: cachetools.LRUCache(maxsize=1024))
    _running: dict[str, asyncio.Future[BuildResult]] = field(default_factory=dict)
    _slots: asyncio.Semaphore | None = None

    async def build(self, key: str, overlay: str, files: Mapping[str, str]) -> BuildResult:
        """The result of building ``overlay`` from ``files`` (repository path → text)."""
        if key in self._cache:
            self.hits += 1
            return self._cache[key]
        if key in self._running:  # the same inputs asked twice at once: built once
            self.hits += 1
            return await asyncio.shield(self._running[key])
        future: asyncio.Future[BuildResult] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.concurrency)
            async with self._slots:
                self.runs += 1
                result = await self._run(overlay, files)
            self._cache[key] = result
            future.set_result(result)
            return result
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a waiter may never come
            raise
        finally:
            self._running.pop(key, None)

    async def _run(self, overlay: str, files: Mapping[str, str]) -> BuildResult:
        folder = await asyncio.to_thread(_private_copy, files)
        try:
            output = await self._kustomize(folder, overlay)
        except BuildError as exc:
            return BuildResult(None, _cleaned(str(exc), folder))
        finally:
            await asyncio.to_thread(shutil.rmtree, folder, True)
        try:
            return BuildResult(await asyncio.to_thread(workload_images, output))
        except UnreadableBuild as exc:
            return BuildResult(None, str(exc))

    async def _kustomize(self, folder: Path, overlay: str) -> str:
        target = folder / "repo" / overlay if overlay else folder / "repo"
        process = await asyncio.create_subprocess_exec(
            *self.tool.command, "--load-restrictor", "LoadRestrictionsRootOnly", str(target),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=folder, env=_environment(folder),
            start_new_session=True)
        assert process.stdout is not None and process.stderr is not None
        try:
            async with asyncio.timeout(self.timeout):
                output, errors = await asyncio.gather(
                    _read_capped(process.stdout, self.max_output),
                    _read_capped(process.stderr, 64 * 1024))
                code = await process.wait()
        except TimeoutError:
            await _end(process)
            raise BuildError(f"kustomize did not finish within {self.timeout:g} s") from None
        except OutputTooLarge:
            await _end(process)
            raise BuildError(f"the build printed more than {_size(self.max_output)}") from None
        if code != 0:
            message = errors.decode("utf-8", "replace").strip() or f"exit code {code}"
            raise BuildError(message)
        return output.decode("utf-8", "replace")


# kubectl logs its failure through klog: `E1202 01:06:28.339052 5881 run.go:72] "command
# failed" err="…"`; kustomize itself prints `Error: …`.
_KLOG = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err="(?P<err>.*)"$')


def _unlogged(line: str) -> str:
    found = _KLOG.match(line.strip())
    return found["err"].replace('\\"', '"') if found else line


class BuildError(Exception):
    """kustomize failed; the message is its own."""


class OutputTooLarge(Exception):
    pass


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(65536):
        size += len(chunk)
        if size > cap:
            raise OutputTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):g} MB" if count >= 1024 * 1024 else f"{count} bytes"


# How long a killed build's exit is waited for: its result is decided already, and a job must
# never wait on a child the event loop is not told about.
REAP_SECONDS = 5.0


async def _end(process: asyncio.subprocess.Process) -> None:
    """Kill the build's process group and wait, boundedly, for it to exit."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), REAP_SECONDS)


def _private_copy(files: Mapping[str, str]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="conveyor-build-"))
    root = folder / "repo"
    root.mkdir()
    for path, text in files.items():
        normal = posixpath.normpath(path)
        if normal.startswith(("/", "../")) or normal in ("..", "."):
            continue  # never outside the copy (tree paths never look like this)
        target = root / normal
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (folder / "home").mkdir()
    (folder / "plugins").mkdir()
    return folder


def _environment(folder: Path) -> dict[str, str]:
    home = str(folder / "home")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home,
        "KUSTOMIZE_PLUGIN_HOME": str(folder / "plugins"),
        "KUBECONFIG": str(folder / "home" / "no-kubeconfig"),
        "HTTP_PROXY": CLOSED_PROXY, "HTTPS_PROXY": CLOSED_PROXY,
        "http_proxy": CLOSED_PROXY, "https_proxy": CLOSED_PROXY, "NO_PROXY": "", "no_proxy": "",
        "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_SSH_COMMAND": "false",
    }


def _cleaned(message: str, folder: Path) -> str:
    """kustomize's message with the private copy's folder taken out of its paths (and
    kubectl's log prefix taken off), on one line, bounded."""
    text = "\n".join(_unlogged(line) for line in message.splitlines())
    text = text.replace(f"{folder}/repo/", "").replace(f"{folder}/repo", ".")
    text = text.replace(f"{folder}/", "")
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"
