"""`World`: the emulator's whole state (accounts, repositories, installations, tokens), ids,
randomness, the clock, and look-ups."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime

from conveyor_emulator.sigstore.instance import GitHubSigstore
from conveyor_emulator.store.state import (
    JSON,
    Account,
    ArchiveLink,
    CheckSuite,
    Comment,
    Installation,
    Issue,
    ManifestApp,
    Package,
    Repo,
    Team,
    Token,
)


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
        # github.com signs the commits made through the API and the merges it performs
        # (committer `web-flow`, verification.verified); a GitHub Enterprise Server signs them
        # only once its administrator configures web commit signing ("Configuring web commit
        # signing", GitHub Enterprise Server docs): False plays a server without it.
        self.web_commit_signing = True
        # Repository rulesets and "Get rules for a branch" (GET /repos/{owner}/{repo}/rules/
        # branches/{branch}) came to GitHub Enterprise Server with 3.11; an older server
        # answers the endpoint 404. False plays such a server.
        self.rulesets_supported = True
        # "Get a tree" with `recursive`: at most this many entries, then `truncated: true`
        self.tree_entry_limit = 100_000
        self._sigstore: GitHubSigstore | None = None

    @property
    def sigstore(self) -> GitHubSigstore:
        """The Sigstore instances that sign artifact attestations, made on first use."""
        if self._sigstore is None:
            self._sigstore = GitHubSigstore()
        return self._sigstore

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
