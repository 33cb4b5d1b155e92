"""Seeding the emulator: accounts, teams, repositories, permissions, installations and tokens."""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor_emulator.accounts import shapes_accounts
from conveyor_emulator.apps import shapes_apps
from conveyor_emulator.driver.base import EmulatorBase
from conveyor_emulator.store import node_ids
from conveyor_emulator.store.state import (
    PULL_REQUEST_RULE,
    Installation,
    Repo,
    RequiredCheck,
    Ruleset,
    Team,
)

DEFAULT_PERMISSIONS = {
    "actions": "read", "attestations": "read", "checks": "write", "contents": "write",
    "deployments": "write", "issues": "write", "members": "read", "merge_queues": "read",
    "metadata": "read", "packages": "read", "pull_requests": "write", "statuses": "read",
}

DEFAULT_EVENTS = [
    "check_run", "check_suite", "deployment", "deployment_status", "issue_comment", "issues",
    "merge_group", "package", "pull_request", "pull_request_review", "push",
    "registry_package", "release", "status",
]


class Seeding(EmulatorBase):
    def add_user(self, login: str, *, type: str = "User", name: str | None = None) -> dict[str,
                                                                                           Any]:
        acct = self.world.account(login)
        acct.type = type
        acct.name = name
        return shapes_accounts.user(self.world, acct)

    def add_org(self, login: str) -> dict[str, Any]:
        return self.add_user(login, type="Organization")

    def add_team(self, org: str, slug: str, members: Sequence[str]) -> None:
        for member in members:
            self.world.account(member)
        self.world.teams[(org.lower(), slug.lower())] = Team(self.world.next_id(), org, slug,
                                                              set(members))

    def add_repo(self, full_name: str, *, files: Mapping[str, str] | None = None,
                 default_branch: str = "main", private: bool = False) -> Repo:
        owner, name = full_name.split("/", 1)
        self.world.account(owner)
        repo = Repo(self.world.next_id(), self.world.account(owner).login, name, private,
                    default_branch, self.world.now())
        self.world.repos[full_name.lower()] = repo
        if files:
            sig = self.ops.signature(owner)
            encoded = {p: c.encode() for p, c in files.items()}
            sha = self.ops.write_commit(repo, None, encoded, "Initial commit", sig, sig, False)
            repo.refs["refs/heads/" + default_branch] = sha
        return repo

    def set_permission(self, repo: str, user: str, permission: str) -> None:
        if permission not in ("admin", "maintain", "write", "triage", "read", "none"):
            raise ValueError(f"unknown permission {permission}")
        self.world.account(user)
        self.world.repo_by_name(repo).permissions[user.lower()] = permission

    def set_required_checks(self, repo: str, contexts: Sequence[str], *,
                            app_id: int | None = None) -> None:
        """Branch protection on the default branch: these contexts must pass to merge, from
        the app `app_id` only, or from any source (None)."""
        self.world.repo_by_name(repo).required_checks = [
            RequiredCheck(context, app_id) for context in contexts]

    def add_ruleset(self, repo: str, checks: Sequence[tuple[str, int | None]], *,
                    name: str = "default branch", strict: bool = False,
                    pull_request: Mapping[str, Any] | None = None) -> int:
        """A ruleset on the default branch requiring these (context, integration id) checks,
        branches up to date before merging where `strict`, and, where `pull_request` is given,
        a pull request rule with those parameters over the others off and 0
        (`{"require_last_push_approval": True}`); its id."""
        parameters = None
        if pull_request is not None:
            unknown = set(pull_request) - set(PULL_REQUEST_RULE)
            if unknown:
                raise ValueError(f"not a parameter of a pull request rule: {sorted(unknown)}")
            parameters = {**copy.deepcopy(PULL_REQUEST_RULE), **pull_request}
        ruleset = Ruleset(self.world.next_id(), name,
                          [RequiredCheck(context, app_id) for context, app_id in checks],
                          strict=strict, pull_request=parameters)
        self.world.repo_by_name(repo).rulesets.append(ruleset)
        return ruleset.id

    def install(self, account: str, repos: Sequence[str] | None = None, *,
                permissions: Mapping[str, str] | None = None,
                events: Sequence[str] | None = None) -> int:
        self.world.account(account)
        ids = None
        if repos is not None:
            ids = {self.world.repo_by_name(r if "/" in r else f"{account}/{r}").id
                   for r in repos}
        inst = Installation(self.world.next_id(), self.world.account(account).login, ids,
                            dict(permissions or DEFAULT_PERMISSIONS),
                            list(events or DEFAULT_EVENTS), self.world.now())
        self.world.installations[inst.id] = inst
        return inst.id

    async def notify_installation(self, installation_id: int, *, sender: str = "alice") -> int:
        """Send `installation.created` for an installation made with `install`."""
        inst = self.world.installations[installation_id]
        repos = [{"id": r.id, "node_id": node_ids.node_id("Repository", r.id), "name": r.name,
                  "full_name": r.full_name, "private": r.private}
                 for r in self.world.installation_repos(inst)]
        payload = {"action": "created", "installation": shapes_apps.installation(self.world, inst),
                   "repositories": repos, "requester": None,
                   "sender": shapes_accounts.user(self.world, sender)}
        return await self._send("installation", payload, installation_id)

    async def add_installation_repos(self, installation_id: int, repos: Sequence[str], *,
                                     sender: str = "alice") -> int:
        """Add repositories to a selected-repositories installation; sends
        `installation_repositories.added`."""
        inst = self.world.installations[installation_id]
        added = [self.world.repo_by_name(r) for r in repos]
        if inst.repo_ids is not None:
            inst.repo_ids.update(r.id for r in added)
        payload = {
            "action": "added", "installation": shapes_apps.installation(self.world, inst),
            "repository_selection": "all" if inst.repo_ids is None else "selected",
            "repositories_added": [{"id": r.id, "node_id": node_ids.node_id("Repository", r.id),
                                    "name": r.name, "full_name": r.full_name,
                                    "private": r.private} for r in added],
            "repositories_removed": [], "requester": None,
            "sender": shapes_accounts.user(self.world, sender),
        }
        return await self._send("installation_repositories", payload, installation_id)

    async def remove_installation_repos(self, installation_id: int, repos: Sequence[str], *,
                                        sender: str = "alice") -> int:
        """Take repositories out of a selected-repositories installation; sends
        `installation_repositories.removed` (`@octokit/openapi-webhooks`,
        installation-repositories-removed: the same fields as `added`)."""
        inst = self.world.installations[installation_id]
        if inst.repo_ids is None:
            raise ValueError("an installation on all repositories has none to remove")
        removed = [self.world.repo_by_name(r) for r in repos]
        inst.repo_ids.difference_update(r.id for r in removed)
        payload = {
            "action": "removed", "installation": shapes_apps.installation(self.world, inst),
            "repository_selection": "selected", "repositories_added": [],
            "repositories_removed": [{"id": r.id, "node_id": node_ids.node_id("Repository", r.id),
                                      "name": r.name, "full_name": r.full_name,
                                      "private": r.private} for r in removed],
            "requester": None, "sender": shapes_accounts.user(self.world, sender),
        }
        return await self._send("installation_repositories", payload, installation_id)

    def issue_manifest_code(self, manifest: dict[str, Any]) -> str:
        code = secrets.token_hex(10)
        self.world.manifest_codes[code] = dict(manifest)
        return code

    def installation_token(self, installation_id: int) -> str:
        """Mint a token directly (for tests that skip the JWT exchange)."""
        from conveyor_emulator.store.state import Token

        inst = self.world.installations[installation_id]
        value = self.world.random_token("ghs_")
        self.world.tokens[value] = Token(value, inst.id, None, dict(inst.permissions),
                                         time.time() + self.token_ttl)
        return value
