"""The intake's memory of delivery ids: kept at least the time, within the bytes, unseen by the
garbage collector."""

from __future__ import annotations

import gc

import pytest

from bot.runtime.recent import SLICES, RecentKeys, key_bytes

DAY = 24 * 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_key_is_kept_for_at_least_the_ttl_and_at_most_an_eighth_more() -> None:
    clock = Clock()
    recent = RecentKeys(ttl=DAY, max_bytes=1 << 20, clock=clock)
    recent.add("first")
    for _ in range(SLICES * 2 + 2):  # keys keep arriving, each generation gets some
        clock.now += DAY / SLICES / 2
        recent.add(f"at-{clock.now}")
        if clock.now - 1000.0 < DAY:
            assert "first" in recent
    assert clock.now - 1000.0 == DAY + DAY / SLICES
    assert "first" not in recent  # its generation is dropped once the next one is a day old


def test_the_last_generation_alone_expires_on_the_next_add() -> None:
    clock = Clock()
    recent = RecentKeys(ttl=DAY, max_bytes=1 << 20, clock=clock)
    recent.add("lonely")
    clock.now += DAY - 1
    assert "lonely" in recent
    clock.now += DAY / SLICES + 1
    assert "lonely" not in recent  # read: past ttl + a slice
    recent.add("next")
    assert len(recent) == 1 and recent.bytes == key_bytes("next")


def test_the_bytes_are_bounded_by_dropping_the_oldest_keys_first() -> None:
    clock = Clock()
    limit = 200 * key_bytes("d-000")
    recent = RecentKeys(ttl=DAY, max_bytes=limit, clock=clock)
    for number in range(1000):
        recent.add(f"d-{number:03}")
    assert recent.bytes <= limit
    assert "d-999" in recent and "d-000" not in recent
    assert len(recent) >= 200 - 200 // SLICES - 1  # at most one generation short


def test_a_key_added_twice_is_counted_once() -> None:
    recent = RecentKeys(ttl=DAY, max_bytes=1 << 20, clock=Clock())
    recent.add("d-1")
    recent.add("d-1")
    assert len(recent) == 1 and recent.bytes == key_bytes("d-1")
    assert 1 not in recent  # not a string: never a delivery id
    recent.clear()
    assert "d-1" not in recent and recent.bytes == 0


def test_the_garbage_collector_does_not_walk_the_keys() -> None:
    recent = RecentKeys(ttl=DAY, max_bytes=1 << 20, clock=Clock())
    for number in range(5000):
        recent.add(f"delivery-{number}")
    generations = [g.keys for g in recent._generations]
    assert generations and not any(gc.is_tracked(keys) for keys in generations)


@pytest.mark.parametrize(("ttl", "max_bytes"), [(0, 1), (1, 0)])
def test_nonsense_bounds_are_refused(ttl: float, max_bytes: int) -> None:
    with pytest.raises(ValueError):
        RecentKeys(ttl=ttl, max_bytes=max_bytes)
