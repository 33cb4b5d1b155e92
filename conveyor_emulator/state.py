"""The emulator's data model: accounts, repositories and everything GitHub keeps about them."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .gitstore import GitStore

JSON = dict[str, Any]
PERMISSION_ORDER = ["none", "read", "triage", "write", "maintain", "admin"]


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


@dataclass
class Account:
    id: int
    login: str
    type: str  # User | Organization | Bot
    name: str | None = None
    email: str | None = None
    created_at: datetime | None = None

    @property
    def node_id(self) -> str:
        prefix = {"Organization": "O_", "Bot": "BOT_"}.get(self.type, "U_")
        return f"{prefix}kgDO{self.id:08d}"


@dataclass
class Team:
    id: int
    org: str
    slug: str
    members: set[str]


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str = ""
    default: bool = False


@dataclass
class Reaction:
    id: int
    user: str
    content: str
    created_at: datetime


@dataclass
class Comment:
    id: int
    repo: str
    issue_number: int
    user: str
    body: str
    created_at: datetime
    updated_at: datetime
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Review:
    id: int
    user: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    body: str
    commit_id: str
    submitted_at: datetime


@dataclass
class Pull:
    head_ref: str
    base_ref: str
    head_sha: str
    base_sha: str
    draft: bool = False
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    reviews: list[Review] = field(default_factory=list)


@dataclass
class Issue:
    id: int
    number: int
    title: str
    body: str | None
    user: str
    created_at: datetime
    updated_at: datetime
    state: str = "open"
    state_reason: str | None = None
    closed_at: datetime | None = None
    closed_by: str | None = None
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    locked: bool = False
    comment_ids: list[int] = field(default_factory=list)
    pull: Pull | None = None


@dataclass
class CheckSuite:
    id: int
    head_sha: str
    head_branch: str | None
    app_id: int
    created_at: datetime
    updated_at: datetime


@dataclass
class CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    suite_id: int
    app_id: int
    status: str
    conclusion: str | None
    started_at: datetime
    completed_at: datetime | None
    output: JSON
    annotations: list[JSON]
    details_url: str | None
    external_id: str | None
    actions: list[JSON]


@dataclass
class Status:
    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: datetime
    updated_at: datetime


@dataclass
class DeploymentStatus:
    id: int
    state: str
    creator: str
    description: str
    environment: str
    log_url: str
    environment_url: str
    created_at: datetime


@dataclass
class Deployment:
    id: int
    sha: str
    ref: str
    task: str
    environment: str
    original_environment: str
    payload: Any
    description: str | None
    creator: str
    created_at: datetime
    updated_at: datetime
    transient_environment: bool
    production_environment: bool
    statuses: list[DeploymentStatus] = field(default_factory=list)


@dataclass
class Release:
    id: int
    tag_name: str
    target_commitish: str
    name: str | None
    body: str | None
    draft: bool
    prerelease: bool
    author: str
    created_at: datetime
    published_at: datetime | None


@dataclass
class WorkflowRun:
    id: int
    repo: str
    name: str
    head_sha: str
    head_branch: str | None
    path: str
    event: str
    status: str
    conclusion: str | None
    run_number: int
    created_at: datetime
    actor: str


@dataclass
class PackageVersion:
    id: int
    name: str  # the digest
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    author: str


@dataclass
class Package:
    id: int
    name: str
    owner: str
    source_repo: str | None
    created_at: datetime
    versions: list[PackageVersion] = field(default_factory=list)


@dataclass
class Attestation:
    id: int
    repo: str
    digest: str
    bundle: JSON


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    private: bool
    default_branch: str
    created_at: datetime
    store: GitStore = field(default_factory=GitStore)
    refs: dict[str, str] = field(default_factory=dict)
    pushed_at: datetime | None = None
    permissions: dict[str, str] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    check_runs: list[CheckRun] = field(default_factory=list)
    check_suites: list[CheckSuite] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    deployments: list[Deployment] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)
    workflow_runs: list[WorkflowRun] = field(default_factory=list)
    attestations: list[Attestation] = field(default_factory=list)
    required_checks: list[str] = field(default_factory=list)
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def branch_sha(self, branch: str) -> str | None:
        return self.refs.get("refs/heads/" + branch)

    def resolve(self, ref: str) -> str | None:
        """A commit sha for a sha (or unique prefix), branch, tag, or fully qualified ref."""
        for candidate in (ref, "refs/heads/" + ref, "refs/tags/" + ref):
            if candidate in self.refs:
                return self.peel(self.refs[candidate])
        if all(c in "0123456789abcdef" for c in ref.lower()):
            sha = self.store.resolve_prefix(ref.lower())
            if sha and self.store.commit(sha):
                return sha
        return None

    def peel(self, sha: str) -> str:
        tag = self.store.tag(sha)
        while tag is not None:
            sha = tag.object
            tag = self.store.tag(sha)
        return sha


@dataclass
class Installation:
    id: int
    account: str
    repo_ids: set[int] | None  # None: all repositories of the account
    permissions: dict[str, str]
    events: list[str]
    created_at: datetime


@dataclass
class Token:
    value: str
    installation_id: int
    repo_ids: set[int] | None
    permissions: dict[str, str]
    expires_at: float  # wall-clock seconds


@dataclass
class ManifestApp:
    id: int
    slug: str
    name: str
    client_id: str
    client_secret: str
    webhook_secret: str
    pem: str
    public_pem: str
    owner: str
    manifest: JSON


@dataclass(frozen=True)
class ArchiveLink:
    """A repository archive download handed out by `GET /repos/{r}/tarball/{ref}`."""

    repo: str
    sha: str
    expires: float  # time.monotonic()


class World:
    """Everything the emulator knows, plus id allocation and the clock."""

    def __init__(self, *, app_id: int, app_slug: str, seed: int,
                 clock: Callable[[], datetime] | None) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.rng = random.Random(seed)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._next_id = 1000
        self.accounts: dict[str, Account] = {}
        self.teams: dict[tuple[str, str], Team] = {}
        self.repos: dict[str, Repo] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, Token] = {}
        self.packages: dict[tuple[str, str], Package] = {}
        self.comments: dict[int, Comment] = {}
        self.manifest_codes: dict[str, JSON] = {}
        self.manifest_apps: dict[str, ManifestApp] = {}
        self.archive_links: dict[str, ArchiveLink] = {}  # download token → archive
        self.api_url = "http://127.0.0.1/api/v3"
        self.web_url = "http://127.0.0.1"
        self.bot_login = f"{app_slug}[bot]"
        self.token_ttl = 3600.0
        # other GitHub Apps installed beside Conveyor (Argo CD notifications, ...): id -> slug
        self.other_apps: dict[int, str] = {}

    def now(self) -> datetime:
        value = self._clock()
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.replace(microsecond=0)

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def random_hex(self, length: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(length))

    def random_token(self, prefix: str) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return prefix + "".join(self.rng.choice(alphabet) for _ in range(36))

    # -- lookups ---------------------------------------------------------------------------------
    def account(self, login: str) -> Account:
        """The account for `login`, created on first use (as a User, or a Bot for `x[bot]`)."""
        key = login.lower()
        if key not in self.accounts:
            kind = "Bot" if login.endswith("[bot]") else "User"
            self.accounts[key] = Account(self.next_id(), login, kind, created_at=self.now())
        return self.accounts[key]

    def app_of(self, login: str) -> int | None:
        """The app acting as the bot user ``login`` (``<slug>[bot]``), if any."""
        if login.lower() == self.bot_login.lower():
            return self.app_id
        slug = login.lower().removesuffix("[bot]")
        return next((i for i, s in self.other_apps.items()
                     if s == slug and login.lower().endswith("[bot]")), None)

    def find_account(self, login: str) -> Account | None:
        return self.accounts.get(login.lower())

    def repo(self, owner: str, name: str) -> Repo | None:
        return self.repos.get(f"{owner}/{name}".lower())

    def repo_by_name(self, full_name: str) -> Repo:
        repo = self.repos.get(full_name.lower())
        if repo is None:
            raise KeyError(f"unknown repository {full_name}")
        return repo

    def repo_by_id(self, repo_id: int) -> Repo | None:
        return next((r for r in self.repos.values() if r.id == repo_id), None)

    def installation_for(self, repo: Repo) -> Installation | None:
        for inst in self.installations.values():
            if inst.account.lower() != repo.owner.lower():
                continue
            if inst.repo_ids is None or repo.id in inst.repo_ids:
                return inst
        return None

    def installation_repos(self, inst: Installation) -> list[Repo]:
        return [
            r for r in self.repos.values()
            if r.owner.lower() == inst.account.lower()
            and (inst.repo_ids is None or r.id in inst.repo_ids)
        ]

    def permission(self, repo: Repo, login: str) -> str:
        if login.lower() == repo.owner.lower():
            return "admin"
        explicit = repo.permissions.get(login.lower())
        if explicit is not None:
            return explicit
        return "read" if not repo.private else "none"

    def issue(self, repo: Repo, number: int) -> Issue | None:
        return repo.issues.get(number)

    def suite_for(self, repo: Repo, head_sha: str, app_id: int) -> CheckSuite:
        for suite in repo.check_suites:
            if suite.head_sha == head_sha and suite.app_id == app_id:
                return suite
        branch = next(
            (r[len("refs/heads/"):] for r, s in repo.refs.items()
             if s == head_sha and r.startswith("refs/heads/")), None)
        now = self.now()
        suite = CheckSuite(self.next_id(), head_sha, branch, app_id, now, now)
        repo.check_suites.append(suite)
        return suite
