"""Caches bounded by the bytes they hold, not only by how many entries.

A count alone does not bound memory: 64 trees of a small repository take a few kilobytes, 64
of a monorepo's with 100,000 files take gigabytes, and a file text kept by sha may be 1 MB or
40 bytes. Each cache here has both bounds; the least recently used entries go first, and a
value larger than the whole budget is handed back to its reader but not kept.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import cachetools

__all__ = ["SizedLRU", "deep_size", "tree_size"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DICT_ENTRY_BYTES = 40  # a dict's index slot, hash, key and value pointers (64-bit CPython)
MAX_NODES = 100_000  # objects `deep_size` visits at most: an estimate, not a census


class SizedLRU(cachetools.LRUCache[K, V]):
    """An LRU cache of at most `max_bytes` by `sizeof` and at most `max_entries`."""

    def __init__(self, *, max_bytes: int, max_entries: int,
                 sizeof: Callable[[V], int]) -> None:
        super().__init__(maxsize=max_bytes, getsizeof=sizeof)
        self.max_entries = max_entries

    def __setitem__(self, key: K, value: V, cache_setitem: Any = None) -> None:
        if self.getsizeof(value) > self.maxsize:  # kept, it would evict everything else
            self.pop(key, None)
            return
        super().__setitem__(key, value)
        while len(self) > self.max_entries:
            self.popitem()


def tree_size(tree: dict[str, tuple[str, int]] | None) -> int:
    """The bytes of a commit's tree as `bot.github.snapshot` keeps it: path → (sha, size)."""
    if tree is None:
        return sys.getsizeof(None)
    entry = sys.getsizeof(("", 0)) + sys.getsizeof(0) + DICT_ENTRY_BYTES
    return sys.getsizeof(tree) + sum(sys.getsizeof(path) + sys.getsizeof(sha) + entry
                                     for path, (sha, _size) in tree.items())


def deep_size(value: object) -> int:
    """The bytes of `value` and what it holds (dataclasses, tuples, lists, sets, dicts,
    strings), each object counted once; past `MAX_NODES` objects the rest is not counted."""
    seen: set[int] = set()
    pending = [value]
    total = 0
    while pending and len(seen) < MAX_NODES:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        total += sys.getsizeof(current)
        if isinstance(current, (str, bytes, int, float, bool)) or current is None:
            continue
        if isinstance(current, dict):
            pending.extend(current.keys())
            pending.extend(current.values())
        elif isinstance(current, (tuple, list, set, frozenset)):
            pending.extend(current)
        elif dataclasses.is_dataclass(current) and not isinstance(current, type):
            pending.extend(getattr(current, field.name) for field in dataclasses.fields(current))
    return total
