"""Work that one replica does for all: the periodic resync of an installation, the redelivery
of failed deliveries. With several replicas on Redis a lease names who does it now (see
`bot/redisq/locks.py`); in one process there is nobody to share with.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol


class Leases(Protocol):
    def lease(self, key: str, *, keep_for: float) -> AbstractAsyncContextManager[bool]:
        """True when this process is to do the work of `key` now; it keeps the lease while
        the block runs and for `keep_for` seconds after, so that no other replica repeats the
        work meanwhile. False when another replica holds it."""


class LocalLeases:
    """One process: the work is always its own (its loop already runs it once per interval)."""

    @contextlib.asynccontextmanager
    async def lease(self, key: str, *, keep_for: float) -> AsyncIterator[bool]:
        yield True
