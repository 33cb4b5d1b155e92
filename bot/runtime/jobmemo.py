"""What one job already asked GitHub about things that do not change within seconds.

A job can ask the same question more than once: the release named by a tag, probed for each
service of a train under the same tags; a digest's attestation, read for a candidate and again
for its provenance. Inside a job (`job_memo`), `remembered` answers a repeated question from the
first answer, `None` included; outside one it always asks.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Hashable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_memo: contextvars.ContextVar[dict[Hashable, Any] | None] = contextvars.ContextVar(
    "conveyor_job_memo", default=None)


@contextlib.contextmanager
def job_memo() -> Iterator[None]:
    """Around one job: its answers are kept until it ends."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


async def remembered(key: Hashable, ask: Callable[[], Awaitable[T]]) -> T:
    """The answer `ask` gave for `key` earlier in this job, else its answer now. A question
    that raised is not remembered."""
    memo = _memo.get()
    if memo is None:
        return await ask()
    if key in memo:
        value: T = memo[key]
        return value
    value = await ask()
    memo[key] = value
    return value
