"""The services a handler can use, created once per process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .github.client import GitHubClients
from .metrics import Metrics
from .queue import KeyedLocks

if TYPE_CHECKING:
    from .scheduler import Scheduler


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Context:
    clients: GitHubClients
    metrics: Metrics
    scheduler: Scheduler
    locks: KeyedLocks = field(default_factory=KeyedLocks)
    clock: Callable[[], datetime] = utc_now
    # The app's own login ("<slug>[bot]"), learned from GET /app at start-up.
    bot_login: str = ""
