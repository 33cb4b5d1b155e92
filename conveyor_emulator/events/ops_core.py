"""The world and its webhooks, and what every state change needs: signatures, the
payload envelope, emitting, and pull request and check suite payloads."""

from __future__ import annotations

import asyncio

from conveyor_emulator.accounts import shapes_accounts
from conveyor_emulator.checks import shapes_checks
from conveyor_emulator.events.webhooks import Delivery, Webhooks
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.pulls.pull_merge import merge_info, pull_stats
from conveyor_emulator.repos import shapes_repos
from conveyor_emulator.store import node_ids
from conveyor_emulator.store.gitstore import Signature
from conveyor_emulator.store.state import JSON, Issue, Repo
from conveyor_emulator.store.world import World


class OpsCore:
    def __init__(self, world: World, hooks: Webhooks) -> None:
        self.world = world
        self.hooks = hooks

    def signature(self, login: str) -> Signature:
        acct = self.world.account(login)
        email = f"{acct.id}+{acct.login}@users.noreply.github.com"
        return Signature(acct.name or acct.login, email, self.world.now())

    def web_flow(self) -> Signature:
        return Signature("GitHub", "noreply@github.com", self.world.now())

    def web_committer(self, author: Signature) -> tuple[Signature, bool]:
        """The committer of a commit GitHub makes for an API write, and whether it is signed:
        `web-flow` and signed where web commit signing is on, else the author, unsigned."""
        if self.world.web_commit_signing:
            return self.web_flow(), True
        return author, False

    def merge_committer(self) -> tuple[Signature, bool]:
        """The committer of a merge GitHub performs: `web-flow`, signed; on a server without
        web commit signing an unsigned one that names no account."""
        if self.world.web_commit_signing:
            return self.web_flow(), True
        host = self.world.web_url.split("://", 1)[-1].split("/", 1)[0]
        return Signature("GitHub Enterprise", f"noreply@{host}", self.world.now()), False

    def envelope(self, repo: Repo | None, sender: str, owner: str | None = None) -> JSON | None:
        """Common payload fields, or None when the app is not installed where this happened."""
        world = self.world
        account = owner or (repo.owner if repo else None)
        inst = world.installation_for(repo) if repo else next(
            (i for i in world.installations.values()
             if account and i.account.lower() == account.lower()), None)
        if inst is None:
            return None
        out: JSON = {"sender": shapes_accounts.user(world, sender),
                     "installation": {"id": inst.id, "node_id": node_ids.node_id("Inst", inst.id)}}
        if repo is not None:
            out["repository"] = shapes_repos.repository(world, repo)
        org = world.find_account(account) if account else None
        if org is not None and org.type == "Organization":
            out["organization"] = shapes_accounts.organization(world, org)
        return out

    def emit(self, event: str, repo: Repo | None, sender: str, body: JSON,
             owner: str | None = None) -> asyncio.Future[Delivery] | None:
        env = self.envelope(repo, sender, owner)
        if env is None:
            return None
        inst_id = env["installation"]["id"]
        inst = self.world.installations[inst_id]
        if event not in inst.events and event not in ("installation", "installation_repositories"):
            return None
        # GitHub writes `action` first: so does every example payload of
        # @octokit/webhooks-examples that has one
        payload = {**({"action": body["action"]} if "action" in body else {}), **body, **env}
        return self.hooks.emit(event, payload, installation_id=inst_id,
                               repository_id=repo.id if repo else None)

    def _suite_json(self, repo: Repo, sha: str) -> JSON:
        suite = self.world.suite_for(repo, sha, self.world.app_id)
        return shapes_checks.check_suite(self.world, repo, suite.id)

    def pull_json(self, repo: Repo, item: Issue) -> JSON:
        mergeable, state, _ = merge_info(repo, item)
        return shapes_issues.pull(self.world, repo, item, mergeable=mergeable,
                                  mergeable_state=state, stats=pull_stats(repo, item))
