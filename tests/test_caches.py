"""Caches bounded by bytes as well as entries (`bot.caches`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from bot.caches import MAX_NODES, SizedLRU, deep_size, tree_size


def test_the_bytes_bound_evicts_the_least_recently_used_first() -> None:
    cache: SizedLRU[str, str] = SizedLRU(max_bytes=3 * sys.getsizeof("x" * 100),
                                         max_entries=100, sizeof=sys.getsizeof)
    for name in "abc":
        cache[name] = name * 100
    assert cache["a"] == "a" * 100  # used: "b" is now the least recently used
    cache["d"] = "d" * 100
    assert sorted(cache) == ["a", "c", "d"]
    assert cache.currsize <= cache.maxsize


def test_the_entries_bound_holds_too_and_can_grow() -> None:
    cache: SizedLRU[int, str] = SizedLRU(max_bytes=1 << 20, max_entries=2, sizeof=sys.getsizeof)
    for number in range(3):
        cache[number] = "x"
    assert sorted(cache) == [1, 2]
    cache.max_entries = 3
    cache[3] = "x"
    assert sorted(cache) == [1, 2, 3]


def test_a_value_larger_than_the_budget_is_not_kept_and_evicts_nothing() -> None:
    cache: SizedLRU[str, str] = SizedLRU(max_bytes=200, max_entries=10, sizeof=sys.getsizeof)
    cache["small"] = "s"
    cache["huge"] = "h" * 1000
    assert "huge" not in cache and cache["small"] == "s"
    cache["small"] = "s" * 1000  # replaced by one too large: the old value is dropped, not kept
    assert "small" not in cache


@dataclass(frozen=True)
class Inputs:
    files: tuple[str, ...]
    problems: list[str]
    extra: dict[str, int]


def test_deep_size_counts_what_a_value_holds_once() -> None:
    shared = "apps/web/overlays/production/kustomization.yaml"
    inputs = Inputs((shared, shared), ["no such file"], {"replicas": 3})
    expected = (sys.getsizeof(inputs) + sys.getsizeof(inputs.files) + sys.getsizeof(shared)
                + sys.getsizeof(inputs.problems) + sys.getsizeof("no such file")
                + sys.getsizeof(inputs.extra) + sys.getsizeof("replicas") + sys.getsizeof(3))
    assert deep_size(inputs) == expected
    assert deep_size(None) == sys.getsizeof(None)
    assert deep_size(b"abc") == sys.getsizeof(b"abc")
    assert deep_size({1, 2}) == sys.getsizeof({1, 2}) + sys.getsizeof(1) + sys.getsizeof(2)
    opaque = object()  # neither a container nor a dataclass: itself only
    assert deep_size((opaque,)) == sys.getsizeof((opaque,)) + sys.getsizeof(opaque)


def test_deep_size_stops_counting_after_its_node_budget() -> None:
    many = [str(number) for number in range(MAX_NODES * 2)]
    assert deep_size(many) < sys.getsizeof(many) + MAX_NODES * sys.getsizeof("199999")


def test_a_tree_is_sized_by_its_paths_and_shas() -> None:
    small = {"a.yaml": ("0" * 40, 10)}
    large = {f"apps/svc-{n}/kustomization.yaml": ("0" * 40, 10) for n in range(1000)}
    assert tree_size(None) == sys.getsizeof(None)
    assert 0 < tree_size(small) < tree_size(large)
    assert tree_size(large) > 1000 * (sys.getsizeof("0" * 40) + 30)
