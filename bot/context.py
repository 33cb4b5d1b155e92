"""The services a handler can use, created once per process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import cachetools

from .github.client import GitHubClients
from .leases import Leases, LocalLeases
from .metrics import Metrics
from .promotion.delivery_board import DeliveryBoard
from .promotion.gatekeeper import GateService
from .promotion.policies import PolicyIndex
from .promotion.release_polls import ReleasePolls
from .promotion.status import StatusSources
from .queue import KeyedLocks, RepoLocks
from .registry.lookup import ImageLookup

if TYPE_CHECKING:
    from .scheduler import Scheduler


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Context:
    clients: GitHubClients
    metrics: Metrics
    scheduler: Scheduler
    # Tags, digests and labels come from the images' registries, never the Packages API.
    images: ImageLookup
    locks: RepoLocks = field(default_factory=KeyedLocks)
    leases: Leases = field(default_factory=LocalLeases)
    clock: Callable[[], datetime] = utc_now
    policies: PolicyIndex = field(default_factory=PolicyIndex)
    release_polls: ReleasePolls = field(default_factory=ReleasePolls)
    gates: GateService = field(default_factory=GateService)
    status: StatusSources = field(default_factory=StatusSources)
    delivery: DeliveryBoard = field(default_factory=DeliveryBoard)
    # Tagged images whose package event was handled (its twin event, a redelivery), marked only
    # once handled so that a retried job runs again.
    handled_images: cachetools.TTLCache[tuple[str, str, str], bool] = field(
        default_factory=lambda: cachetools.TTLCache(maxsize=10_000, ttl=600))
    # The app's own login ("<slug>[bot]"), learned from GET /app at start-up.
    bot_login: str = ""
    # The app's numeric id (GITHUB_APP_ID): how its own check runs and deployments are known.
    app_id: int | None = None

    @property
    def web_url(self) -> str:
        return web_url_for(self.clients.api_url)


def web_url_for(api_url: str) -> str:
    """The web UI base of a REST API base: api.github.com → github.com, /api/v3 → host."""
    if api_url.rstrip("/") == "https://api.github.com":
        return "https://github.com"
    return api_url.rstrip("/").removesuffix("/api/v3")
