"""Which repositories are deployment repositories, and the policy each one serves.

A deployment repository is any repository of an installation holding `.github/conveyor.yml` on
its default branch. The index is built from the installation's repository list once, kept
current by `installation_repositories` events (only the repositories they name are read) and
`push` events, and checked on resync. Every read is conditional, so an unchanged policy costs a
`304`. A repository without a policy (a `404` is never conditional) is not asked again while
the list shows the same `pushed_at`, which GitHub moves on every push to any of its branches, or
while its branch head stays where it was. A broken policy never replaces the last valid one; a
repository whose policy was never valid is a `BrokenPolicy`, which only the gate, the command
refusal and the config check ever see. A policy file Conveyor cannot take as it is (a symbolic
link, which the contents API follows to another file; not UTF-8; over 1 MB) is broken too.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gidgethub.abc import GitHubAPI

from bot.domain.images import canonical_image_name
from bot.domain.policy import Policy, PolicyError, PolicyIssue, load_policy
from bot.github.graphql import holds_path
from bot.github.refusals import or_none
from bot.github.repos import UnreadableFile, branch_head, get_file, get_repository
from bot.names import POLICY_PATH
from bot.runtime.offload import run_cpu

log = logging.getLogger(__name__)

# `pushed_at` has a resolution of one second, and the bot's clock may be a little off GitHub's:
# only a `pushed_at` this much older than the listing proves that a later push moves it.
SETTLED_AFTER = timedelta(minutes=1)
# Repositories whose policy discovery reads at once (each a request or two).
DISCOVERY_READS = 4


@dataclass
class DeploymentRepo:
    """A deployment repository with a usable policy: its policy file's, or while that file is
    broken (`issues` lists its errors), the last valid one."""

    full_name: str
    policy: Policy
    default_branch: str = "main"
    issues: list[PolicyIssue] = field(default_factory=list)  # errors of the current file
    policy_blob: str | None = None


@dataclass
class BrokenPolicy:
    """A deployment repository whose policy file is broken and was never valid before."""

    full_name: str
    issues: list[PolicyIssue]  # errors of the current file
    default_branch: str = "main"
    policy_blob: str | None = None


IndexedRepo = DeploymentRepo | BrokenPolicy


@dataclass(frozen=True)
class _NoPolicy:
    head: str  # the default branch's head when the policy was not there ("" when not read)
    # the list's `pushed_at` then, when old enough to stand for the head ("" otherwise): GitHub
    # moves `pushed_at` on every push to any branch of the repository
    pushed_at: str


@dataclass(frozen=True)
class _Listed:
    """A repository as the installation's list shows it."""

    name: str
    default_branch: str
    pushed_at: str
    settled_pushed_at: str  # `pushed_at` when old enough to stand for the head, else ""
    node_id: str


@dataclass
class _Installation:
    repos: dict[str, IndexedRepo] = field(default_factory=dict)  # lower-case name → repo
    loaded: bool = False
    # lower-case name → default-branch head at which the repository had no policy: while the
    # lower-case name → where a repository had no policy (`404`s are never conditional and
    # count against the rate limit)
    without_policy: dict[str, _NoPolicy] = field(default_factory=dict)
    # lower-case name → `pushed_at` as last listed ("" when not known) of each repository of
    # the installation
    installed: dict[str, str] = field(default_factory=dict)


class PolicyIndex:
    def __init__(self) -> None:
        self._installations: dict[int, _Installation] = {}

    def _installation(self, installation_id: int) -> _Installation:
        return self._installations.setdefault(installation_id, _Installation())

    async def load(self, gh: GitHubAPI, installation_id: int, *, force: bool = False,
                   now: datetime | None = None) -> list[DeploymentRepo]:
        """The installation's deployment repositories with a usable policy (read once, then on
        refresh). `now`: when the list is read, for its `pushed_at`s to stand for branch
        heads."""
        entry = self._installation(installation_id)
        if entry.loaded and not force:
            return _usable(entry)
        listed: list[_Listed] = []
        async for repo in gh.getiter("/installation/repositories?per_page=100",
                                     iterable_key="repositories"):
            if not repo.get("archived"):
                pushed_at = str(repo.get("pushed_at") or "")
                listed.append(_Listed(str(repo["full_name"]),
                                      str(repo.get("default_branch") or "main"), pushed_at,
                                      settled(pushed_at, now), str(repo.get("node_id") or "")))
        entry.installed = {repo.name.lower(): repo.pushed_at for repo in listed}
        unread = [repo.node_id for repo in listed if repo.node_id and _unread(entry, repo)]
        # One GraphQL query answers for 100 repositories that REST would ask one by one (a
        # `404` each for those without a policy); those it shows a file for, or does not
        # answer for, are read over REST as before (conditional from then on).
        holding = await holds_path(gh, unread, POLICY_PATH) if unread else {}
        # The repositories are read a few at a time: a cold start's first promotion waits
        # for its policy, not for the head reads of the repositories that hold none.
        slots = asyncio.Semaphore(DISCOVERY_READS)

        async def refreshed(repo: _Listed) -> None:
            async with slots:
                await self.refresh(gh, installation_id, repo.name, repo.default_branch,
                                   pushed_at=repo.settled_pushed_at,
                                   absent=holding.get(repo.name.lower()) is False)

        failures = [result for result in await asyncio.gather(
            *(refreshed(repo) for repo in listed), return_exceptions=True)
            if isinstance(result, BaseException)]
        if failures:
            raise failures[0]
        order = [repo.name.lower() for repo in listed]  # the list's order, whatever finished first
        entry.repos = {key: entry.repos[key] for key in order if key in entry.repos}
        for stale in set(entry.without_policy) - set(entry.installed):
            del entry.without_policy[stale]
        entry.loaded = True
        return _usable(entry)

    async def added(self, gh: GitHubAPI, installation_id: int,
                    repositories: list[tuple[str, str]]) -> None:
        """Repositories added to the installation (`installation_repositories`), as (full
        name, node id): only they are read, and as at discovery GraphQL says which of them
        hold a policy, 100 a query. Before the installation is indexed, the whole list is read
        instead."""
        entry = self._installation(installation_id)
        if not entry.loaded:
            await self.load(gh, installation_id)
            return
        node_ids = [node_id for _name, node_id in repositories if node_id]
        holding = await holds_path(gh, node_ids, POLICY_PATH) if node_ids else {}
        for name, _node_id in repositories:
            entry.installed.setdefault(name.lower(), "")
            await self.refresh(gh, installation_id, name,
                               absent=holding.get(name.lower()) is False)

    def removed(self, installation_id: int, full_names: list[str]) -> None:
        """Repositories removed from the installation: forgotten, nothing is read."""
        entry = self._installation(installation_id)
        for name in full_names:
            self.forget(installation_id, name)
            entry.installed.pop(name.lower(), None)

    async def refresh(self, gh: GitHubAPI, installation_id: int, full_name: str,
                      default_branch: str | None = None, *, force: bool = False,
                      pushed_at: str = "", absent: bool = False) -> IndexedRepo | None:
        """Re-read one repository's policy from its default branch.

        A repository without a policy is not asked again (a 404 is never conditional) while
        the installation's list shows the same `pushed_at` (given when older than
        `SETTLED_AFTER`: no request at all), or else while its branch head, read after the
        404, stays there (a `304`). `force` (a push that touched the policy) skips that memory.
        `absent`: the default branch was just seen without the file (GraphQL), standing for
        the 404.
        """
        entry = self._installation(installation_id)
        key = full_name.lower()
        if default_branch is None:
            known = entry.repos.get(key)
            default_branch = known.default_branch if known else None
        remembered = entry.without_policy.get(key)
        if remembered is not None and not force:
            if pushed_at and remembered.pushed_at == pushed_at:
                return None
            if default_branch and remembered.head:
                head = await _head(gh, full_name, default_branch)
                if head == remembered.head:
                    entry.without_policy[key] = _NoPolicy(head, pushed_at)
                    return None
        entry.without_policy.pop(key, None)
        try:
            policy_file = None if absent else await get_file(gh, full_name, POLICY_PATH,
                                                             strict=True)
        except UnreadableFile as exc:
            return _broken(entry, key, full_name,
                           [PolicyIssue(POLICY_PATH, 1, 1, f"{POLICY_PATH} is {exc}")])
        if policy_file is None:
            entry.repos.pop(key, None)
            if pushed_at:  # listed before this read: a push since moves it
                entry.without_policy[key] = _NoPolicy("", pushed_at)
            elif default_branch:
                # Read after the 404: a policy pushed in between arrives with its push event,
                # which refreshes with `force`.
                head = await _head(gh, full_name, default_branch)
                if head is not None:
                    entry.without_policy[key] = _NoPolicy(head, "")
            return None
        if default_branch is None:
            default_branch = str((await get_repository(gh, full_name))["default_branch"])
        known = entry.repos.get(key)
        if known is not None:
            known.default_branch = default_branch
            if known.policy_blob == policy_file.sha:
                return known
        try:
            policy = await run_cpu(len(policy_file.text), load_policy, policy_file.text,
                                   POLICY_PATH)
        except PolicyError as exc:
            repo = _broken(entry, key, full_name, list(exc.issues))
            repo.default_branch, repo.policy_blob = default_branch, policy_file.sha
            log.warning(
                "policy is invalid; the last valid one keeps serving",
                extra={"repository": full_name, "errors": len(exc.issues),
                       "has_previous": isinstance(repo, DeploymentRepo)},
            )
            return repo
        if isinstance(known, DeploymentRepo):
            known.policy, known.issues, known.policy_blob = policy, [], policy_file.sha
            return known
        usable = DeploymentRepo(full_name, policy, default_branch, policy_blob=policy_file.sha)
        entry.repos[key] = usable
        return usable

    def installed(self, installation_id: int) -> dict[str, str]:
        """Lower-case name → `pushed_at` ("" when not known) of the installation's
        repositories, as last listed and then changed by events (empty before)."""
        return self._installation(installation_id).installed

    async def get(self, gh: GitHubAPI, installation_id: int, full_name: str,
                  default_branch: str | None = None) -> IndexedRepo | None:
        """The deployment repository of that name, usable or broken; None for any other."""
        entry = self._installation(installation_id)
        repo = entry.repos.get(full_name.lower())
        if repo is not None or entry.loaded:
            return repo
        return await self.refresh(gh, installation_id, full_name, default_branch)

    def forget(self, installation_id: int, full_name: str | None = None) -> None:
        if full_name is None:
            self._installations.pop(installation_id, None)
        else:
            entry = self._installation(installation_id)
            entry.repos.pop(full_name.lower(), None)
            entry.without_policy.pop(full_name.lower(), None)

    async def services_for_source(self, gh: GitHubAPI, installation_id: int, source: str
                                  ) -> list[tuple[DeploymentRepo, str]]:
        """(deployment repo, service name) pairs fed by this source repository."""
        found = []
        for repo in await self.load(gh, installation_id):
            for service in repo.policy.services_for_source(source):
                found.append((repo, service.name))
        return found

    async def services_for_image(self, gh: GitHubAPI, installation_id: int, image: str
                                 ) -> list[tuple[DeploymentRepo, str]]:
        wanted = canonical_image_name(image)
        found = []
        for repo in await self.load(gh, installation_id):
            for service in repo.policy.services.values():
                if canonical_image_name(service.image) == wanted:
                    found.append((repo, service.name))
        return found


def _unread(entry: _Installation, repo: _Listed) -> bool:
    """Whether `refresh` would read the repository's policy file with nothing to stand for
    it: not indexed, and no `404` remembered that the list's `pushed_at` or a branch head read
    can answer for."""
    key = repo.name.lower()
    if key in entry.repos:
        return False
    remembered = entry.without_policy.get(key)
    if remembered is None:
        return True
    listed_stands = bool(repo.settled_pushed_at) and remembered.pushed_at == repo.settled_pushed_at
    return not listed_stands and not remembered.head


def _usable(entry: _Installation) -> list[DeploymentRepo]:
    return [repo for repo in entry.repos.values() if isinstance(repo, DeploymentRepo)]


def _broken(entry: _Installation, key: str, full_name: str, issues: list[PolicyIssue]
            ) -> IndexedRepo:
    """Record the current file's errors: a usable repository keeps its last valid policy."""
    repo = entry.repos.get(key)
    if repo is None:
        repo = entry.repos[key] = BrokenPolicy(full_name, issues)
    else:
        repo.issues = issues
    return repo


def settled(pushed_at: str, now: datetime | None) -> str:
    """`pushed_at` when it is older than `SETTLED_AFTER` at `now` (a later push moves it), else
    ""."""
    if not pushed_at or now is None:
        return ""
    try:
        at = datetime.fromisoformat(pushed_at)
    except ValueError:
        return ""
    return pushed_at if at.tzinfo is not None and at < now - SETTLED_AFTER else ""


async def _head(gh: GitHubAPI, full_name: str, branch: str) -> str | None:
    """The default branch's head commit, or None when it cannot be read (an empty repository)."""
    return await or_none(branch_head(gh, full_name, branch), 404, 409)
