"""GitHub's refusals that tell the caller "there is nothing here", not that something broke."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import gidgethub

T = TypeVar("T")


async def or_none(call: Awaitable[T], *statuses: int) -> T | None:
    """What `call` returns, or None when GitHub refuses it with one of `statuses` (such as a
    404 for what does not exist, a 409 for an empty repository, a 422 for an unknown commit);
    any other refusal is raised."""
    try:
        return await call
    except gidgethub.BadRequest as exc:
        if exc.status_code in statuses:
            return None
        raise
