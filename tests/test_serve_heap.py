"""`python -m bot serve` takes what start-up made out of the cyclic collector's walks."""

from __future__ import annotations

import gc
import weakref

from aiohttp import web

from bot.serving.serve import freeze_startup_heap


class Node:
    other: object = None


def tracked(thing: object) -> bool:
    return any(o is thing for o in gc.get_objects())


async def test_the_start_up_heap_is_frozen_after_its_garbage_is_collected() -> None:
    gc.unfreeze()
    kept = Node()
    dropped = Node()
    dropped.other = dropped  # a cycle: only the collector frees it
    gone = weakref.ref(dropped)
    del dropped
    try:
        await freeze_startup_heap(web.Application())
        assert gone() is None  # collected first, not frozen forever
        assert gc.get_freeze_count() > 0 and not tracked(kept)
    finally:
        gc.unfreeze()
    assert tracked(kept)
