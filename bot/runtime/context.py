"""The infrastructure every part of the bot works with, created once per app: the GitHub and
registry clients, the repository files read so far, the overlay builder, the Sigstore trust
roots, metrics, timers, locks, leases and the clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import cachetools

from bot.attestations.trust import SigstoreTrust
from bot.caches import SizedLRU, deep_size
from bot.github.client import GitHubClients
from bot.github.snapshot import RepoFiles
from bot.metrics import Metrics
from bot.registry.lookup import ImageLookup
from bot.render.build import Builder
from bot.render.reads import RenderInputs
from bot.render.syncs import SyncObject
from bot.render.targets import Target
from bot.runtime.leases import Leases, LocalLeases
from bot.runtime.queue import KeyedLocks, RepoLocks
from bot.runtime.scheduler import Scheduler

BUILD_INPUTS_BYTES = 32 * 1024 * 1024  # what renders read, kept by (repo, commit, target)
SYNC_BLOBS_BYTES = 16 * 1024 * 1024  # the Argo CD and Flux objects of files, by blob


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class AppIdentity:
    """The app's own login ("<slug>[bot]"), the one thing of the app learned after start:
    GitHub says it (GET /app) once the server runs."""

    login: str = ""


@dataclass
class Context:
    clients: GitHubClients
    metrics: Metrics
    scheduler: Scheduler
    # Tags, digests and labels come from the images' registries, never the Packages API.
    images: ImageLookup
    # Trees by commit and file texts by blob sha, shared by every reader of repository files.
    files: RepoFiles = field(default_factory=RepoFiles)
    # Builds Kustomize overlays and renders charts; None when neither kustomize nor Helm is
    # there (rendering is off).
    builder: Builder | None = None
    # What a render reads at a commit, (repo, commit, target) → its inputs.
    build_inputs: cachetools.LRUCache[tuple[str, str, Target], RenderInputs] = field(
        default_factory=lambda: SizedLRU(max_bytes=BUILD_INPUTS_BYTES, max_entries=8192,
                                         sizeof=deep_size))
    # The Argo CD and Flux objects of a repository at a commit, (repo, commit) → objects, and
    # of one file, (blob sha, path) → objects: what says how a chart environment renders.
    sync_scans: cachetools.LRUCache[tuple[str, str], list[SyncObject]] = field(
        default_factory=lambda: cachetools.LRUCache(maxsize=256))
    sync_blobs: cachetools.LRUCache[tuple[str, str], tuple[SyncObject, ...]] = field(
        default_factory=lambda: SizedLRU(max_bytes=SYNC_BLOBS_BYTES, max_entries=50_000,
                                         sizeof=deep_size))
    locks: RepoLocks = field(default_factory=KeyedLocks)
    leases: Leases = field(default_factory=LocalLeases)
    clock: Callable[[], datetime] = utc_now
    # Who the app is on GitHub, learned from GET /app at start-up.
    identity: AppIdentity = field(default_factory=lambda: AppIdentity())
    # The app's numeric id (GITHUB_APP_ID): how its own check runs and deployments are known.
    app_id: int | None = None
    # The trusted Sigstore roots and the verifier of attestation bundles built on them.
    attestations: SigstoreTrust = field(default_factory=SigstoreTrust)

    @property
    def bot_login(self) -> str:
        """The app's own login ("<slug>[bot]"); empty until GitHub has said it."""
        return self.identity.login

    @property
    def web_url(self) -> str:
        return web_url_for(self.clients.api_url)


def web_url_for(api_url: str) -> str:
    """The web UI base of a REST API base: api.github.com → github.com, /api/v3 → host."""
    if api_url.rstrip("/") == "https://api.github.com":
        return "https://github.com"
    return api_url.rstrip("/").removesuffix("/api/v3")
