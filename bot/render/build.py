"""One render on a private copy of its files: bounded, without network, cached.

A render is a kustomize build of an overlay (``KustomizeJob``) or a ``helm template`` of a
chart (``HelmJob``). The copy holds exactly the files the render's inputs name
(`inputs.py`, `charts.py`), written below a fresh folder of mode 0700 that is removed
afterwards; what Conveyor writes itself (a wrapper kustomization that applies a pointer's own
images or patches, inline values) goes into a folder beside the copy, never into it.

kustomize runs with the root-only load restrictor and none of the flags that enable plugins,
exec or container functions; Helm chart inflation (``--enable-helm``) only where the overlay
has local ``helmCharts`` and a Helm is configured. Helm runs ``template`` on a chart folder of
the copy, with no dependency update, no post-renderer and no cluster (its ``lookup`` finds
nothing). Both run in an environment of their own: a home, Helm's config, cache and plugin
folders empty and private, and every proxy variable pointing at a closed local port, so that
a fetch tried anyway fails at once. A render taking longer than ``timeout`` is killed with its
process group; one printing more than ``max_output`` bytes is stopped there. Results are
kept by the caller's key (what is rendered and the blob sha of every input file): the same
inputs are rendered once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import re
import secrets
import shutil
import signal
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cachetools
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from bot.render import batching
from bot.render.diff import Resources
from bot.render.tool import Helm, Kustomize
from bot.render.workloads import Slot, UnreadableBuild, read_documents, read_output

BUILD_SECONDS = 30.0
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_ERROR_CHARS = 800
# Nothing listens here: a fetch a tool tries despite the walk fails without waiting.
CLOSED_PROXY = "http://127.0.0.1:9"
# The private copy: the repository's files below `repo/`, what Conveyor writes below
# `generated/` (a wrapper kustomization names the overlay as `../repo/<overlay>`).
COPY_REPO = "repo"
COPY_GENERATED = "generated"


@dataclass(frozen=True)
class KustomizeJob:
    """Build ``folder`` (a repository path, '' the root) with kustomize; ``wrapper``, when
    set, is a kustomization built instead, over the overlay (``../repo/<folder>``)."""

    folder: str
    wrapper: str | None = None
    inflates: bool = False  # local `helmCharts:` inflated with the configured Helm

    @property
    def where(self) -> str:
        return self.folder or "."


@dataclass(frozen=True)
class HelmJob:
    """``helm template`` of the chart in ``chart``: its own ``values.yaml`` (replaced by an
    empty one when ``replace_defaults``: Flux's ``valuesFiles``), then ``value_files`` in
    order, then ``inline`` values, then ``parameters`` (``--set``; ``--set-string`` when the
    flag is true)."""

    chart: str
    release: str
    namespace: str
    value_files: tuple[str, ...] = ()
    inline: str | None = None
    parameters: tuple[tuple[str, str, bool], ...] = ()
    replace_defaults: bool = False

    @property
    def where(self) -> str:
        return self.chart or "."


@dataclass(frozen=True)
class ManifestsJob:
    """Plain manifests synced as they are: the files of ``paths``, read without a tool."""

    folder: str
    paths: tuple[str, ...]

    @property
    def where(self) -> str:
        return self.folder or "."


Job = KustomizeJob | HelmJob | ManifestsJob


@dataclass(frozen=True)
class BuildResult:
    """The images of every workload of one render, or why there are none; ``resources`` are
    the rendered resources for the diff reviewers read."""

    images: Mapping[Slot, str] | None
    error: str | None = None
    resources: Resources | None = None


@dataclass
class Builder:
    """Runs renders with ``tool`` (kustomize) and ``helm``, at most ``concurrency`` at once
    whichever tool, and keeps their results."""

    tool: Kustomize | None
    helm: Helm | None = None
    timeout: float = BUILD_SECONDS
    max_output: int = MAX_OUTPUT_BYTES
    concurrency: int = 2
    runs: int = 0  # tool runs (a batch of overlays is one)
    hits: int = 0  # renders answered from the cache
    shared_runs: int = 0  # of those, runs that built several overlays at once
    batched: int = 0  # renders answered by a shared run
    _cache: cachetools.LRUCache[str, BuildResult] = field(
        default_factory=lambda: cachetools.LRUCache(maxsize=1024))
    _running: dict[str, asyncio.Future[BuildResult]] = field(default_factory=dict)
    _slots: asyncio.Semaphore | None = None
    _prebuilt: set[str] = field(default_factory=set)  # rendered by `build_many`, not yet asked

    async def build(self, key: str, job: Job, files: Mapping[str, str | bytes]) -> BuildResult:
        """The result of ``job`` over ``files`` (repository path → text or bytes)."""
        if key in self._cache:
            if key in self._prebuilt:
                self._prebuilt.discard(key)  # asked ahead by `build_many`: counted there
            else:
                self.hits += 1
            return self._cache[key]
        if key in self._running:  # the same inputs asked twice at once: rendered once
            self.hits += 1
            return await asyncio.shield(self._running[key])
        refused = self._refusal(job)
        if refused is not None:
            return BuildResult(None, refused)
        self._start(key)
        try:
            result = await self._alone(job, files)
        except BaseException as exc:
            self._fail([key], exc)
            raise
        self._finish(key, result)
        return result

    async def build_many(self, requests: Sequence[tuple[str, Job, Mapping[str, str | bytes]]]
                         ) -> None:
        """Render every request (key, job, files) not answered yet, as ``build`` would, and
        keep the results: overlays of one commit that may share a kustomize run in batches
        (`batching.py`), the others alone; at most ``concurrency`` runs at once."""
        fresh = list({key: (key, job, files) for key, job, files in requests}.values())
        shareable = await asyncio.to_thread(self._shareable, fresh)
        batchable: list[Request] = []
        alone: list[Request] = []
        for request, share in zip(fresh, shareable, strict=True):
            if request[0] not in self._cache and request[0] not in self._running:
                (batchable if share else alone).append(request)
        seen = {key for key, _, _ in [*batchable, *alone]}
        if len(self._prebuilt) > self._cache.maxsize:
            self._prebuilt.clear()
        self._prebuilt.update(seen)
        if len(batchable) < 2:
            alone, batchable = alone + batchable, []
        chunks, unpaired = _chunks(batchable, self.concurrency)
        for chunk in chunks:  # before any wait: a render asked meanwhile waits for its batch
            for key, _, _ in chunk:
                self._start(key)
        await asyncio.gather(*(self.build(key, job, files) for key, job, files in
                               [*alone, *unpaired]),
                             *(self._batch(chunk) for chunk in chunks))

    def _shareable(self, requests: list[Request]) -> list[bool]:
        """Which requests may share a kustomize run (`batching.alone_reason`)."""
        seen: dict[tuple[str, str | bytes], str | None] = {}
        return [isinstance(job, KustomizeJob) and job.wrapper is None and not job.inflates
                and self.tool is not None and batching.alone_reason(files, seen) is None
                for _, job, files in requests]

    def _start(self, key: str) -> asyncio.Future[BuildResult]:
        future: asyncio.Future[BuildResult] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        return future

    def _finish(self, key: str, result: BuildResult) -> None:
        self._cache[key] = result
        future = self._running.pop(key, None)
        if future is not None and not future.done():
            future.set_result(result)

    def _fail(self, keys: Sequence[str], exc: BaseException) -> None:
        for key in keys:
            future = self._running.pop(key, None)
            if future is not None and not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved: a waiter may never come

    def _slot(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        return self._slots

    async def _alone(self, job: Job, files: Mapping[str, str | bytes]) -> BuildResult:
        async with self._slot():
            self.runs += 1
            return await self._run(job, files)

    async def _batch(self, chunk: list[Request]) -> None:
        """One batch: its renders from shared runs where they are exact, the rest alone."""
        keys = [key for key, _, _ in chunk]
        try:
            results = await self._batched(chunk)
            left = []
            for (key, job, files), result in zip(chunk, results, strict=True):
                if result is None:
                    left.append((key, job, files))
                else:
                    self.batched += 1
                    self._finish(key, result)
            alone = await asyncio.gather(*(self._alone(job, files) for _, job, files in left))
            for (key, _, _), result in zip(left, alone, strict=True):
                self._finish(key, result)
        except BaseException as exc:
            self._fail(keys, exc)
            raise

    async def _batched(self, chunk: list[Request]) -> list[BuildResult | None]:
        """The renders of ``chunk`` from one run (None: to be built alone); a run that fails
        is tried again in halves."""
        if len(chunk) < 2:
            return [None] * len(chunk)
        parts = await self._shared_run(chunk)
        if parts is None:
            half = len(chunk) // 2
            first, second = await asyncio.gather(self._batched(chunk[:half]),
                                                 self._batched(chunk[half:]))
            return [*first, *second]
        return await asyncio.to_thread(_exact_results, parts)

    async def _shared_run(self, chunk: list[Request]) -> list[str] | None:
        """What each overlay of ``chunk`` prints, from one kustomize run; None when the run
        fails or its output cannot be split."""
        assert self.tool is not None
        files: dict[str, str | bytes] = {}
        for _, _, own in chunk:
            files.update(own)
        nonce = secrets.token_hex(8)
        folders = [job.folder for _, job, _ in chunk if isinstance(job, KustomizeJob)]
        async with self._slot():
            self.runs += 1
            self.shared_runs += 1
            folder = await asyncio.to_thread(_private_copy, files)
            try:
                generated = folder / COPY_GENERATED
                for path, text in batching.wrappers(folders, nonce, COPY_REPO).items():
                    (generated / path).parent.mkdir(parents=True, exist_ok=True)
                    (generated / path).write_text(text, encoding="utf-8")
                command = [*self.tool.command, "--load-restrictor", "LoadRestrictionsRootOnly",
                           str(generated)]
                output = await self._execute("kustomize", command, folder)
            except BuildError:
                return None
            finally:
                await asyncio.to_thread(shutil.rmtree, folder, True)
        return batching.split(output, len(chunk), nonce)

    def _refusal(self, job: Job) -> str | None:
        if isinstance(job, HelmJob) and self.helm is None:
            return "chart rendering is off (no helm): the chart cannot be rendered"
        if isinstance(job, KustomizeJob) and self.tool is None:
            return "rendering is off (no kustomize): the overlay cannot be built"
        if isinstance(job, KustomizeJob) and job.inflates and self.helm is None:
            return ("it inflates Helm charts (`helmCharts`) and chart rendering is off "
                    "(no helm): what they deploy cannot be judged")
        return None

    async def _run(self, job: Job, files: Mapping[str, str | bytes]) -> BuildResult:
        if isinstance(job, ManifestsJob):
            return await self._read(job, files)
        folder = await asyncio.to_thread(_private_copy, files)
        try:
            if isinstance(job, HelmJob):
                tool, command = "helm", await asyncio.to_thread(self._helm_command, folder, job)
            else:
                tool, command = "kustomize", await asyncio.to_thread(
                    self._kustomize_command, folder, job)
            output = await self._execute(tool, command, folder)
        except BuildError as exc:
            return BuildResult(None, _cleaned(str(exc), folder))
        finally:
            await asyncio.to_thread(shutil.rmtree, folder, True)
        try:
            images, resources = await asyncio.to_thread(read_output, output)
        except UnreadableBuild as exc:
            return BuildResult(None, str(exc))
        return BuildResult(images, resources=resources)

    async def _read(self, job: ManifestsJob, files: Mapping[str, str | bytes]) -> BuildResult:
        texts = [files[path] for path in job.paths]
        if any(isinstance(text, bytes) for text in texts):
            return BuildResult(None, "a manifest is not UTF-8 text")
        output = "\n---\n".join(str(text) for text in texts)
        if len(output.encode()) > self.max_output:
            return BuildResult(None, f"the manifests add up to more than "
                                     f"{_size(self.max_output)}")
        try:
            images, resources = await asyncio.to_thread(read_output, output)
        except UnreadableBuild as exc:
            return BuildResult(None, str(exc))
        return BuildResult(images, resources=resources)

    def _kustomize_command(self, folder: Path, job: KustomizeJob) -> list[str]:
        assert self.tool is not None
        target = folder / COPY_REPO / job.folder if job.folder else folder / COPY_REPO
        if job.wrapper is not None:
            target = folder / COPY_GENERATED
            target.mkdir()
            (target / "kustomization.yaml").write_text(job.wrapper, encoding="utf-8")
        command = [*self.tool.command, "--load-restrictor", "LoadRestrictionsRootOnly"]
        if job.inflates and self.helm is not None:
            command += ["--enable-helm", "--helm-command", self.helm.executable]
        return [*command, str(target)]

    def _helm_command(self, folder: Path, job: HelmJob) -> list[str]:
        assert self.helm is not None
        repo, generated = folder / COPY_REPO, folder / COPY_GENERATED
        generated.mkdir()
        chart = repo / job.chart if job.chart else repo
        command = [self.helm.executable, "template", job.release, str(chart),
                   "--namespace", job.namespace, "--include-crds"]
        defaults = posixpath.join(job.chart, "values.yaml") if job.chart else "values.yaml"
        if job.replace_defaults:
            # Flux packages the chart with its valuesFiles merged as the chart's values: the
            # chart's own values.yaml counts only where the list names it.
            original = chart / "values.yaml"
            if original.is_file():
                original.replace(generated / "chart-values.yaml")
            original.write_text("{}\n", encoding="utf-8")
        for path in job.value_files:
            if job.replace_defaults and path == defaults:
                command += ["--values", str(generated / "chart-values.yaml")]
            else:
                command += ["--values", str(repo / path)]
        if job.inline is not None:
            (generated / "inline-values.yaml").write_text(job.inline, encoding="utf-8")
            command += ["--values", str(generated / "inline-values.yaml")]
        for name, value, literal in job.parameters:
            # Helm splits --set on commas; a comma of the value is escaped, as Argo CD does.
            command += ["--set-string" if literal else "--set",
                        f"{name}={value.replace(',', chr(92) + ',')}"]
        return command

    async def _execute(self, tool: str, command: list[str], folder: Path) -> str:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
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
            raise BuildError(f"{tool} did not finish within {self.timeout:g} s") from None
        except OutputTooLarge:
            await _end(process)
            raise BuildError(f"the render printed more than {_size(self.max_output)}") from None
        except asyncio.CancelledError:  # the job gave up: so does its render
            await _end(process)
            raise
        if code != 0:
            message = errors.decode("utf-8", "replace").strip() or f"exit code {code}"
            raise BuildError(_with_hint(message))
        return output.decode("utf-8", "replace")


# kubectl logs its failure through klog: `E1202 01:06:28.339052 5881 run.go:72] "command
# failed" err="…"`; kustomize itself prints `Error: …`.
_KLOG = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ \S+\] "command failed" err="(?P<err>.*)"$')
# kustomize before v5.8 asks Helm `version -c`, a flag Helm 4 no longer has.
_OLD_KUSTOMIZE = "unknown shorthand flag: 'c' in -c"


def _unlogged(line: str) -> str:
    found = _KLOG.match(line.strip())
    return found["err"].replace('\\"', '"') if found else line


def _with_hint(message: str) -> str:
    if _OLD_KUSTOMIZE in message:
        return (f"{message} (this kustomize is older than v5.8 and cannot run Helm 4 to "
                "inflate `helmCharts`: set CONVEYOR_KUSTOMIZE to kustomize v5.8 or later)")
    return message


Request = tuple[str, "Job", Mapping[str, str | bytes]]
# Overlays in one shared run: enough that its start and schema load are a small part of it.
BATCH_SIZE = 200
# Files in one shared run's copy.
MAX_BATCH_FILES = 20000


def _chunks(requests: list[Request], concurrency: int) -> tuple[list[list[Request]],
                                                                  list[Request]]:
    """Requests in batches of about equal size, one per concurrent run where each then holds
    two or more; and those whose files disagree with a batch's (built alone)."""
    count = max(min(concurrency, len(requests) // 2), -(-len(requests) // BATCH_SIZE), 1)
    size = -(-len(requests) // count)
    chunks: list[list[Request]] = []
    unpaired: list[Request] = []
    files: dict[str, str | bytes] = {}
    for request in requests:
        own = request[2]
        if not chunks or len(chunks[-1]) >= size or len(files) + len(own) > MAX_BATCH_FILES:
            chunks.append([])
            files = {}
        if any(files.get(path, content) != content for path, content in own.items()):
            unpaired.append(request)
            continue
        chunks[-1].append(request)
        files.update(own)
    return [chunk for chunk in chunks if chunk], unpaired


def _exact_results(parts: list[str]) -> list[BuildResult | None]:
    """Each overlay's result from its part of a shared run, where the part is provably its
    own build's output (`batching.isolated`); None elsewhere."""
    documents: list[list[object] | None] = []
    for part in parts:
        try:
            documents.append(list(YAML(typ="safe").load_all(part)))
        except YAMLError:
            documents.append(None)
    readable = [batching.part_of(found) if found is not None else batching.Part((), (), True)
                for found in documents]
    exact = batching.isolated(readable)
    results: list[BuildResult | None] = []
    for found, keep in zip(documents, exact, strict=True):
        if found is None or not keep:
            results.append(None)
            continue
        images, resources = read_documents(found)
        results.append(BuildResult(images, resources=resources))
    return results


class BuildError(Exception):
    """The tool failed; the message is its own."""


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


# How long a killed render's exit is waited for: its result is decided already, and a job
# must never wait on a child the event loop is not told about.
REAP_SECONDS = 5.0


async def _end(process: asyncio.subprocess.Process) -> None:
    """Kill the render's process group and wait, boundedly, for it to exit."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), REAP_SECONDS)


def _private_copy(files: Mapping[str, str | bytes]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="conveyor-build-"))
    root = folder / COPY_REPO
    root.mkdir()
    for path, content in files.items():
        normal = posixpath.normpath(path)
        if normal.startswith(("/", "../")) or normal in ("..", "."):
            continue  # never outside the copy (tree paths never look like this)
        target = root / normal
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    for private in ("home", "plugins", "tmp"):
        (folder / private).mkdir()
    return folder


def _environment(folder: Path) -> dict[str, str]:
    home = str(folder / "home")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home, "XDG_DATA_HOME": home,
        "TMPDIR": str(folder / "tmp"),
        "KUSTOMIZE_PLUGIN_HOME": str(folder / "plugins"),
        "HELM_PLUGINS": str(folder / "plugins"), "HELM_CONFIG_HOME": home,
        "HELM_CACHE_HOME": home, "HELM_DATA_HOME": home,
        "HELM_REPOSITORY_CONFIG": str(folder / "home" / "repositories.yaml"),
        "HELM_REPOSITORY_CACHE": str(folder / "home" / "repository"),
        "HELM_REGISTRY_CONFIG": str(folder / "home" / "registry.json"),
        "KUBECONFIG": str(folder / "home" / "no-kubeconfig"),
        "HTTP_PROXY": CLOSED_PROXY, "HTTPS_PROXY": CLOSED_PROXY,
        "http_proxy": CLOSED_PROXY, "https_proxy": CLOSED_PROXY, "NO_PROXY": "", "no_proxy": "",
        "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_SSH_COMMAND": "false",
    }


def _cleaned(message: str, folder: Path) -> str:
    """The tool's message with the private copy's folder taken out of its paths (and
    kubectl's log prefix taken off), on one line, bounded."""
    text = "\n".join(_unlogged(line) for line in message.splitlines())
    for part in (COPY_REPO, COPY_GENERATED):
        text = text.replace(f"{folder}/{part}/", "").replace(f"{folder}/{part}", ".")
    text = text.replace(f"{folder}/", "")
    text = " ".join(text.split())
    # kustomize, kubectl and Helm open with "Error: " or "error: ": the finding says so.
    text = re.sub(r"^error: ", "", text, flags=re.IGNORECASE)
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"
