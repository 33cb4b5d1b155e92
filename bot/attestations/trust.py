"""The trusted roots in use: where they come from, when they were last had, and why one is
missing.

Without `CONVEYOR_SIGSTORE_TRUST`, the roots are Sigstore's public-good instance and GitHub's
own, each through its TUF repository, refreshed at start and then daily. A refresh that fails
keeps the root its last refresh verified, for at most `STALE_AFTER`; a root never had, or
older than that, is missing, and a bundle it would verify is not verified (the attestation
condition fails closed, saying why). With `CONVEYOR_SIGSTORE_TRUST`, the roots are the file's
(read once at start: an air-gapped site, a test), and nothing is fetched.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from bot.attestations.roots import NamedRoot, load_root, load_roots_text
from bot.attestations.trustfile import SETTING, RootError, TrustFile, read_trust_text
from bot.attestations.tuf import TufError, TufRepository
from bot.attestations.verify import BundleVerifier

log = logging.getLogger(__name__)

REFRESH_EVERY = timedelta(days=1)
RETRY_AFTER = timedelta(minutes=15)
STALE_AFTER = timedelta(days=7)
T = TypeVar("T")


def read_trust_file(path: str) -> TrustFile:
    """The file named by `CONVEYOR_SIGSTORE_TRUST`, its roots checked; `RootError` naming the
    file and the line otherwise."""
    trust = read_trust_text(path)
    check_roots(trust)
    return trust


def check_roots(trust: TrustFile) -> None:
    """`RootError` naming the file and the line when a root in it cannot be used."""
    try:
        load_roots_text(trust.text)
    except RootError as exc:
        raise RootError(f"{trust.origin}: {exc}") from None


@dataclass
class _Held:
    root: NamedRoot
    refreshed: datetime


def default_cache() -> Path:
    """Where TUF metadata is kept between refreshes: the user's cache directory, or a private
    temporary one where that cannot be written."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conveyor" / "tuf"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / ".writable"
        probe.touch()
        probe.unlink()
    except OSError:
        return Path(tempfile.mkdtemp(prefix="conveyor-tuf-"))
    return base


class SigstoreTrust:
    """The roots a `BundleVerifier` verifies against, kept fresh."""

    def __init__(self, *, file: TrustFile | None = None,
                 repositories: Sequence[TufRepository] = (),
                 cache: Callable[[], Path] = default_cache,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._file = file
        self._repositories = tuple(repositories)
        self._cache = cache
        self._clock = clock
        self._held: dict[str, _Held] = {}
        self._problems: dict[str, str] = {}
        self._generation = 0
        self._loaded = asyncio.Event()
        self._lock = threading.Lock()
        if file is not None:
            loaded = self._clock()
            self._set({root.name: _Held(root, loaded) for root in load_roots_text(file.text)},
                      {})
            self._loaded.set()
        elif not self._repositories:
            self._problems[""] = f"{SETTING} is not set and no TUF repository is configured"
            self._loaded.set()
        self.verifier = BundleVerifier(self.current)

    @property
    def fetches(self) -> bool:
        """Whether the roots come from TUF repositories (and need refreshing)."""
        return self._file is None and bool(self._repositories)

    def _set(self, held: dict[str, _Held], problems: dict[str, str]) -> None:
        with self._lock:
            self._held, self._problems = held, problems
            self._generation += 1

    def current(self) -> tuple[int, list[NamedRoot] | None, str | None]:
        """The generation of the roots, the roots usable now (None: none), and what is
        missing (None: nothing)."""
        now = self._clock()
        with self._lock:
            held, problems, generation = dict(self._held), dict(self._problems), self._generation
        roots = []
        for name, item in held.items():
            if self.fetches and now - item.refreshed > STALE_AFTER:
                why = f" ({problems[name]})" if name in problems else ""
                problems[name] = (f"{name}: last refreshed {item.refreshed:%Y-%m-%d %H:%M} UTC, "
                                  f"more than {STALE_AFTER.days} days ago{why}")
            else:
                roots.append(item.root)
        if not self._loaded.is_set():
            problems["loading"] = "the trusted roots are still being loaded"
        missing = "; ".join(problems.values()) or None
        return generation, roots or None, missing

    async def wait_loaded(self) -> None:
        """Until the first refresh has ended (a verification at start-up waits for it; the
        caller bounds the wait)."""
        await self._loaded.wait()

    async def refresh(self) -> None:
        """Fetch every TUF repository's trusted root, each in its own daemon thread (a hung
        connection never holds up the server's exit)."""
        if not self.fetches:
            return
        cache = await _in_thread(self._cache)
        held = dict(self._held)
        problems: dict[str, str] = {}
        for repository in self._repositories:
            try:
                text = await _in_thread(repository.fetch, cache)
                root = load_root(text, repository.name)
            except (TufError, RootError) as exc:
                problems[repository.name] = f"{repository.name}: {exc}"
                log.warning("a Sigstore trusted root could not be refreshed",
                            extra={"root": repository.name, "error": str(exc)})
                continue
            held[repository.name] = _Held(root, self._clock())
        self._set(held, problems)
        self._loaded.set()

    async def keep_fresh(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
                         ) -> None:
        """Refresh now, then daily (every quarter of an hour while a root is missing)."""
        while True:
            await self.refresh()
            wait = RETRY_AFTER if self._problems else REFRESH_EVERY
            await sleep(wait.total_seconds())

    def health(self) -> dict[str, Any]:
        """What /healthz says: where the roots come from, each root and when it was had,
        and what is missing."""
        with self._lock:
            held = dict(self._held)
        body: dict[str, Any] = {
            "source": f"{SETTING} ({self._file.origin})" if self._file is not None
            else "TUF" if self._repositories else "none",
            "roots": {name: item.refreshed.strftime("%Y-%m-%dT%H:%M:%SZ")
                      for name, item in held.items()},
        }
        missing = self.current()[2]
        if missing:
            body["problem"] = missing
        return body


async def _in_thread(func: Callable[..., T], *args: Any) -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            value = func(*args)
        except BaseException as exc:  # handed to the awaiting task
            loop.call_soon_threadsafe(_settle, future, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, future, value, None)

    threading.Thread(target=run, name="conveyor-sigstore-trust", daemon=True).start()
    return await future


def _settle(future: asyncio.Future[T], value: T | None, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)  # type: ignore[arg-type]
