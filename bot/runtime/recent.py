"""Keys seen recently, kept for at least a time and within a size in bytes, at no cost to the
garbage collector.

The intake remembers every delivery id it accepted for a day, so that GitHub's redelivery of one
is answered without queuing it twice. `cachetools.TTLCache` keeps a linked-list node object per
key: at 100,000 ids a full collection walks 200,000 objects and holds the event loop for 13-16
ms, in the middle of whatever deliveries arrive then. Here the keys are held in plain dicts of
strings, which CPython does not track (it skips dicts holding only atomic values):
the collector never walks them. The dicts are generations: a key goes into the newest, a new
generation starts every `ttl / SLICES` or when the newest holds its share of the bytes, and the
oldest is dropped whole once every key in it is older than `ttl` or the total is over
`max_bytes`. A key is therefore remembered for at least `ttl` (less only where the bytes would
run over) and at most `ttl + ttl / SLICES`.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable

__all__ = ["RecentKeys", "key_bytes"]

SLICES = 8  # generations over one `ttl`: a key outlives its `ttl` by at most an eighth
DICT_ENTRY_BYTES = 40  # a dict's index slot, hash, key and value pointers (64-bit CPython)


def key_bytes(key: str) -> int:
    """What holding `key` costs: the string and its dict entry."""
    return sys.getsizeof(key) + DICT_ENTRY_BYTES


class _Generation:
    __slots__ = ("bytes", "keys", "started")

    def __init__(self, started: float) -> None:
        self.started = started
        self.keys: dict[str, None] = {}
        self.bytes = 0


class RecentKeys:
    def __init__(self, *, ttl: float, max_bytes: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= 0 or max_bytes <= 0:
            raise ValueError("ttl and max_bytes must be positive")
        self.ttl = ttl
        self.max_bytes = max_bytes
        self._clock = clock
        self._slice = ttl / SLICES
        self._generations: deque[_Generation] = deque()
        self.bytes = 0

    def add(self, key: str) -> None:
        now = self._clock()
        self._expire(now)
        if any(key in generation.keys for generation in self._generations):
            return
        newest = self._generations[-1] if self._generations else None
        if newest is None or now - newest.started >= self._slice \
                or newest.bytes >= self.max_bytes // SLICES:
            newest = _Generation(now)
            self._generations.append(newest)
        size = key_bytes(key)
        newest.keys[key] = None
        newest.bytes += size
        self.bytes += size
        while self.bytes > self.max_bytes and len(self._generations) > 1:
            self._drop_oldest()

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        for generation in self._generations:
            if key in generation.keys:
                return self._clock() - generation.started < self.ttl + self._slice
        return False

    def __len__(self) -> int:
        return sum(len(generation.keys) for generation in self._generations)

    def clear(self) -> None:
        self._generations.clear()
        self.bytes = 0

    def _expire(self, now: float) -> None:
        # the newest key of a generation came in before the next one started
        while len(self._generations) > 1 and now - self._generations[1].started >= self.ttl:
            self._drop_oldest()
        if self._generations and now - self._generations[0].started >= self.ttl + self._slice:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        self.bytes -= self._generations.popleft().bytes
