"""One rate-limit state per installation, awaited by every request of that installation.

GitHub's rules ("Rate limits for the REST API", and its "Best practices for using the REST API"):
- an answer with `Retry-After` means no request until that many seconds have passed; one with
  `x-ratelimit-remaining: 0` means none until `x-ratelimit-reset`; a secondary-limit 403/429
  with neither means wait at least one minute. Continuing to send while limited may get the
  integration banned, so the wait applies to *every* request of the installation, not only to
  the one that was answered.
- at most about 80 content-generating requests a minute and 500 an hour: mutating requests of
  one installation are paced within that budget (and serialised by the client). A GitHub
  Enterprise Server has the limits its administrator set ("Rate limits are disabled by default
  for GitHub Enterprise Server"): `CONVEYOR_CONTENT_LIMITS` says which (`parse_content_limits`).

The state lives in a `LimitStore`: in memory for one process, or in Redis (`bot.redisq`) so
that the replicas of one deployment share the waits and the write budget.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from typing import Protocol

import gidgethub

from bot.domain.write_budget import GITHUB_COM_BUDGET, HOUR, WriteBudget
from bot.metrics import Metrics

# The key of the app's own requests (a JWT: listing installations, minting tokens). GitHub
# counts an installation's requests (made with its access token) apart from the app's ("Rate
# limits for GitHub Apps"): a wait told to the app holds the app's requests, one told to an
# installation holds that installation's, and neither holds the other. Installation ids are
# positive.
APP = 0
BARE_SECONDARY_WAIT = 60.0  # GitHub: "wait for at least one minute before retrying"


class Timer(Protocol):
    """Where the limiter reads the time (epoch seconds) and how it waits; tests inject one in
    which time passes only while someone waits."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemTimer:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def write_wait(sent: Sequence[float], now: float, budget: WriteBudget) -> float:
    """Seconds from `now` until one more write fits the budget, given the (sorted) times of
    the writes already sent; 0 when it fits now."""
    wait = 0.0
    for window, allowed in budget.windows():
        span = window + budget.margin
        recent = sent[bisect_right(sent, now - span):]
        if allowed <= 0:
            raise ValueError("a write budget must allow at least one request")
        if len(recent) >= allowed:
            # the write that must leave the window before one more may enter it
            wait = max(wait, recent[len(recent) - allowed] + span - now)
    return max(0.0, wait)


class LimitStore(Protocol):
    async def held_until(self, installation: int) -> float:
        """Epoch second before which no request of the installation may be sent."""

    async def hold(self, installation: int, until: float) -> None:
        """No request of the installation until `until` (a later hold is never shortened)."""

    async def reserve_write(self, installation: int, now: float, budget: WriteBudget) -> float:
        """Record a write at `now` and return 0 if it fits the budget; otherwise record
        nothing and return the seconds to wait before asking again."""


class MemoryLimitStore:
    def __init__(self) -> None:
        self._holds: dict[int, float] = {}
        self._writes: dict[int, deque[float]] = {}

    async def held_until(self, installation: int) -> float:
        return self._holds.get(installation, 0.0)

    async def hold(self, installation: int, until: float) -> None:
        self._holds[installation] = max(until, self._holds.get(installation, 0.0))

    async def reserve_write(self, installation: int, now: float, budget: WriteBudget) -> float:
        return self.reserve_now(installation, now, budget)

    def reserve_now(self, installation: int, now: float, budget: WriteBudget) -> float:
        sent = self._writes.setdefault(installation, deque())
        while sent and sent[0] <= now - HOUR - budget.margin:
            sent.popleft()
        wait = write_wait(list(sent), now, budget)
        if wait <= 0:
            sent.append(max(now, sent[-1]) if sent else now)
        return wait


class RateLimitError(gidgethub.GitHubException):
    """GitHub asked the installation to wait longer than a job may sleep; the work is left to
    a retry of the job or to the resync."""


class RateLimiter:
    """The per-installation waits and the write pacing, shared by every client."""

    def __init__(self, *, store: LimitStore | None = None, timer: Timer | None = None,
                 budget: WriteBudget | None = GITHUB_COM_BUDGET, metrics: Metrics | None = None,
                 max_wait: float = 900.0) -> None:
        """`budget` None: writes are not paced (a server without content limits); they are
        still sent one at a time."""
        self.store: LimitStore = store or MemoryLimitStore()
        self.timer: Timer = timer or SystemTimer()
        self.budget = budget
        self.metrics = metrics
        self.max_wait = max_wait

    async def before(self, installation: int, *, write: bool) -> None:
        """Until the installation may send: after every hold, and for a write, within the
        budget. Raises `RateLimitError` when the wait would exceed `max_wait`."""
        while True:
            held = await self.store.held_until(installation) - self.timer.now()
            if held > 0:
                self._check(held)
                self._waited("rate_limited", held)
                await self.timer.sleep(held)
                continue
            if not write or self.budget is None:
                return
            paced = await self.store.reserve_write(installation, self.timer.now(), self.budget)
            if paced <= 0:
                return
            self._check(paced)
            self._waited("pacing", paced)
            await self.timer.sleep(paced)

    async def hold(self, installation: int, seconds: float) -> None:
        await self.store.hold(installation, self.timer.now() + seconds)

    def _check(self, seconds: float) -> None:
        if seconds > self.max_wait:
            raise RateLimitError(f"GitHub asks to wait {round(seconds)} s; left for later")

    def _waited(self, reason: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.github_wait_seconds.labels(reason).inc(seconds)
