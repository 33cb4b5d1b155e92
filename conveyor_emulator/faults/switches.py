"""Fault injection switches and rate-limit accounting."""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

RATE_LIMIT = 5000
WINDOW = 3600


@dataclass
class Faults:
    latency: float = 0.0               # seconds added to every API request
    error_rate: float = 0.0            # fraction answered 502
    graphql_error_rate: float = 0.0    # fraction of GraphQL queries answered 502
    timeout_rate: float = 0.0          # fraction answered only after `timeout_seconds`
    timeout_seconds: float = 30.0
    secondary_rate_limit_rate: float = 0.0   # fraction answered 403 + Retry-After
    retry_after: int = 1
    # fraction answered a secondary-limit 403 without Retry-After (and with requests left):
    # GitHub's guidance for that answer is to wait at least a minute
    bare_secondary_rate: float = 0.0
    # GitHub's content-creation limits ("Rate limits for the REST API", secondary rate limits:
    # no more than 80 content-generating requests a minute and 500 an hour)
    content_per_minute: int = 80
    content_per_hour: int = 500
    # Transient answers real GitHub gives while its replicas catch up (see `Transients`).
    fresh_branch_404_rate: float = 0.0
    stale_sha_409_rate: float = 0.0
    ref_update_failed_rate: float = 0.0
    no_commits_between_rate: float = 0.0
    merge_base_modified_rate: float = 0.0
    merge_not_mergeable_rate: float = 0.0
    rate_limit_exhausted: bool = False  # primary limit: every counted request gets 403
    rate_limit_status: int = 403        # 403 (classic) or 429

    def update(self, values: dict[str, Any]) -> None:
        names = {f.name: f.type for f in fields(self)}
        for key, value in values.items():
            if key not in names:
                raise KeyError(key)
            current = getattr(self, key)
            if isinstance(current, bool):
                setattr(self, key, bool(value))
            elif isinstance(current, int):
                setattr(self, key, int(value))
            else:
                setattr(self, key, float(value))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(Faults(), f.name))


class RateLimits:
    """Primary rate limit per installation (or per app for JWT requests), hour windows."""

    def __init__(self, limit: int = RATE_LIMIT, timer: Callable[[], float] = time.time) -> None:
        self.limit = limit
        self.timer = timer
        self._used: dict[str, tuple[float, int]] = {}

    def _window(self, key: str) -> tuple[float, int]:
        now = self.timer()
        start, used = self._used.get(key, (now, 0))
        if now >= start + WINDOW:
            start, used = now, 0
        self._used[key] = (start, used)
        return start, used

    def remaining(self, key: str) -> int:
        return max(0, self.limit - self._window(key)[1])

    def spend(self, key: str) -> None:
        start, used = self._window(key)
        self._used[key] = (start, used + 1)

    def headers(self, key: str, resource: str = "core", exhausted: bool = False) -> dict[str,
                                                                                         str]:
        start, used = self._window(key)
        remaining = 0 if exhausted else max(0, self.limit - used)
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(start + WINDOW)),
            "x-ratelimit-used": str(self.limit if exhausted else used),
            "x-ratelimit-resource": resource,
        }


class Dice:
    """The seedable randomness behind the fault switches."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def roll(self, rate: float) -> bool:
        return rate > 0 and self.rng.random() < rate


SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID.")
SECONDARY_DOCS = ("https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
                  "#about-secondary-rate-limits")
MUTATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})
BARE_WAIT = 60.0  # GitHub: without Retry-After, "wait for at least one minute"


@dataclass
class Window:
    since: float
    until: float
    announced: bool  # the answer that opened it carried Retry-After


@dataclass
class InWindow:
    """A request that arrived while its installation had been told to wait."""

    key: str
    at: float
    method: str
    path: str


@dataclass
class SecondaryLimits:
    """Secondary rate limits per installation (or app): the content-creation budget, the
    random faults, and the windows they open. While a window is open every request of that
    installation is answered 403 again, and recorded in `inside` (GitHub: continuing to send
    while limited may get the integration banned)."""

    timer: Callable[[], float] = time.time
    windows: dict[str, Window] = field(default_factory=dict)
    opened: list[tuple[str, float, float]] = field(default_factory=list)  # key, from, until
    inside: list[InWindow] = field(default_factory=list)
    _writes: dict[str, deque[float]] = field(default_factory=dict)

    def check(self, key: str, method: str, path: str, faults: Faults, dice: Dice, *,
              content_budget: bool = True, arrived: float | None = None
              ) -> dict[str, str] | None:
        """The headers of a secondary-limit 403 for this request, or None to serve it.
        `content_budget` False: a server without rate limits counts no content creation.
        `arrived`: when the request arrived (before a fault delayed it); one that arrived
        before the window opened was on its way already and is refused without being
        recorded as sent inside it."""
        now = self.timer()
        window = self.windows.get(key)
        if window is not None and now < window.until:
            at = now if arrived is None else arrived
            if at >= window.since:
                self.inside.append(InWindow(key, at, method, path))
            return ({"Retry-After": str(math.ceil(window.until - now))} if window.announced
                    else {})
        if dice.roll(faults.secondary_rate_limit_rate):
            return self._open(key, now, float(faults.retry_after), announced=True)
        if dice.roll(faults.bare_secondary_rate):
            return self._open(key, now, BARE_WAIT, announced=False)
        if method not in MUTATING or not content_budget:
            return None
        sent = self._writes.setdefault(key, deque())
        while sent and sent[0] <= now - 3600:
            sent.popleft()
        wait = 0.0
        for span, allowed in ((60.0, faults.content_per_minute),
                              (3600.0, faults.content_per_hour)):
            recent = [t for t in sent if t > now - span]
            if allowed > 0 and len(recent) >= allowed:
                wait = max(wait, recent[len(recent) - allowed] + span - now)
        if wait > 0:
            return self._open(key, now, float(math.ceil(wait)), announced=True)
        sent.append(now)
        return None

    def _open(self, key: str, now: float, seconds: float, *, announced: bool) -> dict[str, str]:
        self.windows[key] = Window(now, now + seconds, announced)
        self.opened.append((key, now, now + seconds))
        return {"Retry-After": str(int(seconds))} if announced else {}

    def reset(self) -> None:
        self.windows.clear()
        self.opened.clear()
        self.inside.clear()
        self._writes.clear()


REFS = "/repos/{owner}/{repo}/git/refs"
CONTENTS = "/repos/{owner}/{repo}/contents/{path}"
PULLS = "/repos/{owner}/{repo}/pulls"
MERGE = "/repos/{owner}/{repo}/pulls/{pull_number}/merge"


@dataclass
class Transients:
    """Answers GitHub gives now and then and not again a moment later, each documented for its
    operation in GitHub's REST description and reported by apps that met them:
    - a write naming a branch created a moment before answers 404 (the ref is not yet visible
      to the replica serving the write);
    - `PUT /contents` answers 409 "does not match" (Create or update file contents: 409
      Conflict) when the sha it was given is not the file's blob on the branch any more;
    - `POST`/`PATCH` on refs answers 422 "Reference update failed";
    - `POST /pulls` answers 422 "No commits between" right after the head branch was pushed;
    - merging answers 405 "Base branch was modified. Review and try the merge again." or
      "Pull Request is not mergeable" (Merge a pull request: 405 Method Not Allowed) while the
      base moves or mergeability is being computed.
    Each is answered before the request does anything, so a retry of the same request works."""

    fresh_branches: set[str] = field(default_factory=set)
    answered: list[tuple[str, int, str]] = field(default_factory=list)

    def created(self, template: str, method: str, body: Any) -> None:
        if method == "POST" and template == REFS and isinstance(body, dict):
            self.fresh_branches.add(str(body.get("ref", "")).removeprefix("refs/heads/"))

    def check(self, method: str, template: str, params: dict[str, str], body: Any,
              faults: Faults, dice: Dice) -> tuple[int, dict[str, Any]] | None:
        data = body if isinstance(body, dict) else {}
        answer: tuple[int, dict[str, Any]] | None = None
        named = str(data.get("branch") or data.get("head") or "")
        if method in ("PUT", "POST") and named in self.fresh_branches:
            self.fresh_branches.discard(named)
            if dice.roll(faults.fresh_branch_404_rate):
                answer = (404, {"message": f"Branch {named} not found"})
        if answer is None and method == "PUT" and template == CONTENTS and data.get("sha") \
                and dice.roll(faults.stale_sha_409_rate):
            answer = (409, {"message": f"{params.get('path')} does not match {data['sha']}"})
        elif answer is None and template.startswith(REFS) and method in ("POST", "PATCH") \
                and dice.roll(faults.ref_update_failed_rate):
            answer = (422, {"message": "Reference update failed"})
        elif answer is None and method == "POST" and template == PULLS \
                and dice.roll(faults.no_commits_between_rate):
            answer = (422, {"message": "Validation Failed", "errors": [{
                "resource": "PullRequest", "code": "custom",
                "message": f"No commits between {data.get('base')} and {data.get('head')}"}]})
        elif answer is None and method == "PUT" and template == MERGE:
            if dice.roll(faults.merge_base_modified_rate):
                answer = (405, {"message": "Base branch was modified. Review and try the merge "
                                           "again."})
            elif dice.roll(faults.merge_not_mergeable_rate):
                answer = (405, {"message": "Pull Request is not mergeable"})
        if answer is not None:
            self.answered.append((f"{method} {template}", answer[0], answer[1]["message"]))
        return answer
