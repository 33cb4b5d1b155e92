"""Fault injection switches and rate-limit accounting."""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, fields
from typing import Any

RATE_LIMIT = 5000
WINDOW = 3600


@dataclass
class Faults:
    latency: float = 0.0               # seconds added to every API request
    error_rate: float = 0.0            # fraction answered 502
    timeout_rate: float = 0.0          # fraction answered only after `timeout_seconds`
    timeout_seconds: float = 30.0
    secondary_rate_limit_rate: float = 0.0   # fraction answered 403 + Retry-After
    retry_after: int = 1
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

    def __init__(self, limit: int = RATE_LIMIT) -> None:
        self.limit = limit
        self._used: dict[str, tuple[float, int]] = {}

    def _window(self, key: str) -> tuple[float, int]:
        start, used = self._used.get(key, (time.time(), 0))
        if time.time() >= start + WINDOW:
            start, used = time.time(), 0
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
