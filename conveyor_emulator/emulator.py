"""The emulator's state and what it does: seeding, acting as people and CI, and reading state
for assertions. `served.Emulator` serves it over HTTP."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from . import (
    node_ids,
    pull_merge,
    shapes_accounts,
    shapes_apps,
    shapes_checks,
    shapes_deployments,
    shapes_git,
    shapes_issues,
    shapes_releases,
)
from .auth import generate_private_key
from .errors import ApiError
from .faults import Dice, Faults, RateLimits, SecondaryLimits, Transients
from .gitstore import Commit, Tag
from .images import build_image, image_for
from .ops import Ops
from .packages import add_version, attestation_bundle, event_body
from .registry import RegistryState
from .requestlog import RequestLog
from .routes_deployments import auto_merge_conflict
from .state import (
    JSON,
    Account,
    CheckRun,
    Installation,
    Issue,
    Repo,
    Team,
    WorkflowRun,
    World,
)
from .webhooks import Delivery, Webhooks, collect

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


class EmulatorCore:
    """A stateful GitHub: its world, faults, webhooks and registry, without a socket."""

    def __init__(self, *, app_id: int = 1, app_slug: str = "conveyor", webhook_secret: str,
                 webhook_url: str | None = None, validate_openapi: bool = False, seed: int = 0,
                 clock: Callable[[], datetime] | None = None,
                 timer: Callable[[], float] = time.time) -> None:
        """`clock` stamps data (`created_at`...); `timer` (epoch seconds) runs the rate-limit
        windows and their headers, so that a test can share one virtual time with the bot."""
        self.world = World(app_id=app_id, app_slug=app_slug, seed=seed, clock=clock)
        self.app_private_key_pem, self.app_public_key_pem = generate_private_key()
        self.webhook_secret = webhook_secret
        self.faults = Faults()
        self.dice = Dice(seed)
        self.rate_limits = RateLimits(timer=timer)
        self.secondary = SecondaryLimits(timer)
        self.transients = Transients()
        self.requests = RequestLog()
        # GHCR's OCI Distribution API for the images published here (its own request log)
        self.registry = RegistryState()
        self.validator: Any = None
        if validate_openapi:
            from .openapi import OpenAPIValidator

            self.validator = OpenAPIValidator.load()
        self.hooks = Webhooks(
            self.world, secret=webhook_secret, url=webhook_url,
            validate=self.validator.check_webhook if self.validator is not None else None)
        self.ops = Ops(self.world, self.hooks)
        # one list for request, response and webhook payload violations
        self.violations: list[str] = self.hooks.violations
        self.base_url = ""
        self.world.account(self.world.bot_login)
        self.world.account("web-flow")
        self.world.account("github-actions[bot]")

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def web_url(self) -> str:
        """Base of every `html_url` (settable, e.g. to a proxy's address); the API serves at
        `base_url` regardless."""
        return self.world.web_url

    @web_url.setter
    def web_url(self, value: str) -> None:
        self.world.web_url = value.rstrip("/")

    @property
    def api_url(self) -> str:
        """Base of every `url` field in responses (defaults to `base_url`)."""
        return self.world.api_url

    @api_url.setter
    def api_url(self, value: str) -> None:
        self.world.api_url = value.rstrip("/")

    @property
    def app_id(self) -> int:
        return self.world.app_id

    @property
    def app_slug(self) -> str:
        return self.world.app_slug

    def pending_deliveries(self) -> int:
        """Webhook deliveries queued or in flight."""
        return self.hooks.pending

    @property
    def token_ttl(self) -> float:
        """Lifetime of installation tokens in seconds (GitHub: one hour)."""
        return self.world.token_ttl

    @token_ttl.setter
    def token_ttl(self, value: float) -> None:
        self.world.token_ttl = value

    @property
    def webhook_url(self) -> str | None:
        return self.hooks.url

    @webhook_url.setter
    def webhook_url(self, value: str | None) -> None:
        self.hooks.url = value

    @property
    def deliveries(self) -> list[Delivery]:
        return self.hooks.deliveries

    async def settle(self) -> None:
        await self.hooks.settle()

    # -- seeding ---------------------------------------------------------------------------------
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

    def set_required_checks(self, repo: str, contexts: Sequence[str]) -> None:
        """Branch protection on the default branch: these contexts must pass to merge."""
        self.world.repo_by_name(repo).required_checks = list(contexts)

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

    async def _send(self, event: str, payload: JSON, installation_id: int | None) -> int:
        delivery = await self.hooks.send_now(event, payload, installation_id=installation_id)
        return delivery.status_code

    # -- acting as people / CI ---------------------------------------------------------------------
    async def _act(self, fn: Callable[[], Any]) -> Any:
        with collect() as futures:
            result = fn()
        if futures:
            await asyncio.gather(*futures)
        return result

    def _repo(self, full_name: str) -> Repo:
        return self.world.repo_by_name(full_name)

    def _issue(self, repo: Repo, number: int) -> Issue:
        item = repo.issues.get(number)
        if item is None:
            raise KeyError(f"{repo.full_name}#{number} does not exist")
        return item

    async def push_files(self, repo: str, files: Mapping[str, str | bytes | None], *,
                         branch: str | None = None, message: str = "Update files",
                         author: str = "alice") -> str:
        r = self._repo(repo)
        target = branch or r.default_branch
        encoded = {p: (c.encode() if isinstance(c, str) else c) for p, c in files.items()}
        if r.branch_sha(target) is None and r.refs:
            # a new branch starts from the default branch, like `git checkout -b`
            base = r.branch_sha(r.default_branch)
            if base is not None:
                r.refs["refs/heads/" + target] = base
        result: str = await self._act(
            lambda: self.ops.commit_files(r, target, encoded, message, author, verified=False))
        return result

    async def create_branch(self, repo: str, branch: str, sha: str | None = None, *,
                            user: str = "alice") -> None:
        r = self._repo(repo)
        target = sha or r.branch_sha(r.default_branch)
        await self._act(lambda: self.ops.update_ref(r, "refs/heads/" + branch, target, user))

    async def create_tag(self, repo: str, tag: str, sha: str | None = None, *,
                         annotated: bool = False, user: str = "alice") -> None:
        r = self._repo(repo)
        target = r.resolve(sha) if sha else r.branch_sha(r.default_branch)
        if target is None:
            raise KeyError(f"nothing to tag at {sha!r} in {repo}")
        obj = target
        if annotated:
            obj = r.store.put_tag(Tag(tag, target, "commit", f"Release {tag}\n",
                                      self.ops.signature(user)))
        await self._act(lambda: self.ops.update_ref(r, "refs/tags/" + tag, obj, user))

    async def publish_release(self, repo: str, tag: str, *, author: str = "alice",
                              prerelease: bool = False, draft: bool = False,
                              target: str | None = None, name: str | None = None,
                              body: str | None = None) -> dict[str, Any]:
        r = self._repo(repo)
        rel = await self._act(lambda: self.ops.publish_release(
            r, tag, author=author, prerelease=prerelease, draft=draft, target=target, name=name,
            body=body))
        return shapes_releases.release(self.world, r, rel)

    def build_image(self, text: str, *, labels: Mapping[str, str] | None = None) -> str:
        """A multi-arch image with real content standing for `text`: its index digest, ready
        for `publish_container`."""
        return build_image(text, labels=labels).digest

    async def publish_container(self, owner: str, package: str, digest: str,
                                tags: Sequence[str], *, source_repo: str | None = None,
                                revision: str | None = None,
                                sender: str = "github-actions[bot]",
                                emit: bool = True) -> dict[str, Any]:
        """CI pushes an image built by `build_image` (or `digest_of`) and tags it.

        As GHCR does for a multi-arch push, each per-platform manifest arrives first as an
        untagged version with its own `registry_package`/`package` events, then the index with
        one event pair per tag.
        """
        image = image_for(digest)
        if image is None:
            raise ValueError(f"{digest} is not an image built by build_image()/digest_of(): "
                             "the registry serves real content, so digests must be real")
        world = self.world
        self.registry.store(image)
        for platform in image.platform_digests:
            add_version(world, owner, package, platform, [], source_repo, sender)
        pkg, ver = add_version(world, owner, package, digest, tags, source_repo, sender)
        if emit:
            src = world.repos.get(source_repo.lower()) if source_repo else None
            events: list[tuple[str, Any]] = []
            for platform in image.platform_digests:
                pv = next(v for v in pkg.versions if v.name == platform)
                events.append(("", pv))
            for tag in (list(tags) or [""]):
                events.append((tag, ver))

            def fire() -> None:
                for tag_name, version in events:
                    for event in ("registry_package", "package"):
                        body = event_body(world, pkg, version, tag_name, revision=revision,
                                          event=event)
                        self.ops.emit(event, src, sender, {"action": "published", event: body},
                                      owner=owner)

            await self._act(fire)
        return shapes_releases.package_version(world, pkg, ver)

    def add_attestation(self, repo: str, digest: str, *, source_repo: str, commit: str,
                        workflow_path: str = ".github/workflows/release.yml",
                        ref: str = "refs/tags/v1", run_id: int | None = None) -> None:
        r = self._repo(repo)
        run = run_id if run_id is not None else self.world.next_id()
        r.attestations.append(attestation_bundle(
            self.world, r, digest, source_repo=source_repo, commit=commit,
            workflow_path=workflow_path, ref=ref, run_id=run))

    def add_workflow_run(self, repo: str, head_sha: str, *, name: str = "release",
                         conclusion: str = "success", event: str = "push",
                         path: str | None = None, head_branch: str | None = None
                         ) -> dict[str, Any]:
        r = self._repo(repo)
        run = WorkflowRun(self.world.next_id(), r.full_name, name, head_sha,
                          head_branch or r.default_branch,
                          path or f".github/workflows/{name}.yml", event, "completed",
                          conclusion, len(r.workflow_runs) + 1, self.world.now(),
                          "github-actions[bot]")
        r.workflow_runs.append(run)
        return shapes_checks.workflow_run(self.world, r, run)

    async def open_pull(self, repo: str, head: str, *, base: str | None = None, title: str,
                        body: str = "", author: str, draft: bool = False) -> dict[str, Any]:
        r = self._repo(repo)
        item: Issue = await self._act(lambda: self.ops.open_pull(
            r, head, base or r.default_branch, title, body, author, draft))
        return self.ops.pull_json(r, item)

    async def open_issue(self, repo: str, title: str, *, body: str = "", author: str,
                         labels: Sequence[str] = ()) -> dict[str, Any]:
        r = self._repo(repo)

        def run() -> Issue:
            item = self.ops.new_issue(r, title, body, author, list(labels))
            self.ops.emit("issues", r, author, {
                "action": "opened", "issue": shapes_issues.issue(self.world, r, item)})
            return item

        item: Issue = await self._act(run)
        return shapes_issues.issue(self.world, r, item)

    async def comment(self, repo: str, number: int, user: str, body: str) -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        com = await self._act(lambda: self.ops.add_comment(r, item, user, body))
        return shapes_issues.comment(self.world, r, com)

    async def edit_pull(self, repo: str, number: int, *, body: str, user: str
                        ) -> dict[str, Any]:
        """Someone with write access edits the PR's description (anyone's PR, as on GitHub)."""
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.edit_issue(r, item, user, body=body, body_set=True))
        return self.ops.pull_json(r, item)

    async def edit_comment(self, repo: str, comment_id: int, body: str, *,
                           user: str) -> dict[str, Any]:
        r = self._repo(repo)
        com = self.world.comments[comment_id]
        await self._act(lambda: self.ops.edit_comment(r, com, body, user))
        return shapes_issues.comment(self.world, r, com)

    async def review(self, repo: str, number: int, user: str, state: str, *, body: str = "",
                     commit_id: str | None = None) -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        rev = await self._act(lambda: self.ops.submit_review(r, item, user, state, body,
                                                             commit_id))
        return shapes_issues.review(self.world, r, number, rev)

    async def dismiss_review(self, repo: str, number: int, review_id: int, *, user: str,
                             message: str = "Dismissed") -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        rev = await self._act(lambda: self.ops.dismiss_review(r, item, review_id, user,
                                                              message))
        return shapes_issues.review(self.world, r, number, rev)

    async def merge_pull(self, repo: str, number: int, *, user: str,
                         method: str = "squash") -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.merge(r, item, method=method, sha=None, actor=user,
                                               title=None, message=None))
        return self.ops.pull_json(r, item)

    async def close_pull(self, repo: str, number: int, *, user: str) -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.set_issue_state(r, item, "closed", user))
        return self.ops.pull_json(r, item)

    async def add_labels(self, repo: str, number: int, labels: Sequence[str], *,
                         user: str) -> None:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.add_labels(r, item, list(labels), user))

    async def remove_label(self, repo: str, number: int, name: str, *, user: str) -> None:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.remove_label(r, item, name, user))

    async def create_deployment(self, repo: str, sha: str, environment: str, *,
                                state: str = "success", user: str = "argocd[bot]",
                                payload: dict[str, Any] | None = None,
                                auto_merge: bool = False) -> dict[str, Any]:
        """A deployment of ``sha`` by ``user`` and its first status; ``auto_merge`` as the API
        applies it (an ApiError 409 for a sha behind the default branch)."""
        r = self._repo(repo)
        resolved = r.resolve(sha)
        if resolved is None:
            raise KeyError(f"unknown commit {sha}")
        conflict = auto_merge_conflict(r, sha, resolved) if auto_merge else None
        if conflict is not None:
            raise ApiError(409, conflict)

        def run() -> Any:
            dep = self.ops.create_deployment(
                r, ref=sha, sha=resolved, environment=environment, payload=payload or {},
                description=None, actor=user, task="deploy", transient=False,
                production=environment == "production")
            if state:
                self.ops.add_deployment_status(
                    r, dep, state=state, actor=user, description="", log_url="",
                    environment_url="", environment=None)
            return dep

        dep = await self._act(run)
        return shapes_deployments.deployment(self.world, r, dep)

    async def set_deployment_status(self, repo: str, deployment_id: int, state: str, *,
                                    user: str = "argocd[bot]") -> dict[str, Any]:
        r = self._repo(repo)
        dep = next(d for d in r.deployments if d.id == deployment_id)
        st = await self._act(lambda: self.ops.add_deployment_status(
            r, dep, state=state, actor=user, description="", log_url="", environment_url="",
            environment=None))
        return shapes_deployments.deployment_status(self.world, r, dep, st)

    async def set_status(self, repo: str, sha: str, context: str, state: str, *,
                         user: str = "argocd[bot]", description: str | None = None,
                         target_url: str | None = None) -> None:
        r = self._repo(repo)
        resolved = r.resolve(sha)
        if resolved is None:
            raise KeyError(f"unknown commit {sha}")
        await self._act(lambda: self.ops.add_status(r, resolved, state, context, description,
                                                    target_url, user))

    def add_app(self, slug: str) -> int:
        """Another GitHub App on the installation's repositories (Argo CD notifications, a
        Flux notification-controller with app credentials); it acts as ``<slug>[bot]``."""
        app_id = self.world.next_id()
        self.world.other_apps[app_id] = slug.lower()
        self.world.account(f"{slug}[bot]")
        return app_id

    async def create_check_run(self, repo: str, sha: str, name: str, *, app: str,
                               conclusion: str | None = "success", status: str = "completed",
                               details_url: str | None = None) -> dict[str, Any]:
        """A check run created by another app (only GitHub Apps can create check runs)."""
        r = self._repo(repo)
        resolved = r.resolve(sha)
        app_id = self.world.app_of(f"{app}[bot]")
        if resolved is None or app_id is None:
            raise KeyError(f"unknown commit {sha} or app {app}")

        def run() -> CheckRun:
            now = self.world.now()
            suite = self.world.suite_for(r, resolved, app_id)
            check = CheckRun(self.world.next_id(), r.full_name, name, resolved, suite.id,
                             app_id, status, conclusion if status == "completed" else None, now,
                             now if status == "completed" else None, {}, [], details_url,
                             "argocd-notifications", [])
            r.check_runs.append(check)
            self.ops.check_run_event(r, check, "created", f"{app}[bot]")
            if check.status == "completed":
                self.ops.check_run_event(r, check, "completed", f"{app}[bot]")
            return check

        return shapes_checks.check_run(self.world, r, await self._act(run))

    def _check_run(self, repo: Repo, check_run_id: int) -> CheckRun:
        run = next((c for c in repo.check_runs if c.id == check_run_id), None)
        if run is None:
            raise KeyError(f"unknown check run {check_run_id}")
        return run

    async def rerequest_check_run(self, repo: str, check_run_id: int, *, user: str) -> None:
        r = self._repo(repo)
        run = self._check_run(r, check_run_id)
        await self._act(lambda: self.ops.check_run_event(r, run, "rerequested", user))

    async def request_check_run_action(self, repo: str, check_run_id: int, identifier: str, *,
                                       user: str) -> None:
        r = self._repo(repo)
        run = self._check_run(r, check_run_id)
        await self._act(lambda: self.ops.check_run_event(
            r, run, "requested_action", user, {"requested_action": {"identifier": identifier}}))

    async def rerequest_check_suite(self, repo: str, sha: str, *, user: str) -> None:
        r = self._repo(repo)
        resolved = r.resolve(sha)
        if resolved is None:
            raise KeyError(f"unknown commit {sha}")
        await self._act(lambda: self.ops.emit("check_suite", r, user, {
            "action": "rerequested", "check_suite": self.ops._suite_json(r, resolved)}))

    async def merge_group(self, repo: str, number: int, *, user: str = "alice") -> str:
        """Put a pull request in the merge queue: a `gh-readonly-queue/...` branch holding the
        merge result, and `merge_group.checks_requested`. Returns the queue commit's sha."""
        r = self._repo(repo)
        item = self._issue(r, number)
        pr = item.pull
        assert pr is not None
        mergeable, _, tree = pull_merge.merge_info(r, item)
        if not mergeable or tree is None:
            raise ApiError(405, "Pull Request is not mergeable")
        base_sha = r.branch_sha(pr.base_ref)
        assert base_sha is not None
        sig = self.ops.web_flow()
        sha = r.store.put_commit(Commit(tree, (base_sha, pr.head_sha),
                                        f"Merge pull request #{number}", sig, sig, True))
        branch = f"gh-readonly-queue/{pr.base_ref}/pr-{number}-{pr.head_sha}"
        r.refs["refs/heads/" + branch] = sha
        commit = r.store.commit(sha)
        assert commit is not None
        body = {"action": "checks_requested", "merge_group": {
            "head_sha": sha, "head_ref": "refs/heads/" + branch, "base_sha": base_sha,
            "base_ref": "refs/heads/" + pr.base_ref,
            "head_commit": {
                "id": sha, "tree_id": commit.tree, "message": commit.message,
                "timestamp": commit.committer.date.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "author": {"name": sig.name, "email": sig.email},
                "committer": {"name": sig.name, "email": sig.email}}}}
        await self._act(lambda: self.ops.emit("merge_group", r, user, body))
        return sha

    async def send_event(self, event: str, payload: dict[str, Any]) -> int:
        inst = payload.get("installation")
        inst_id = inst.get("id") if isinstance(inst, dict) else None
        repo = payload.get("repository")
        repo_id = repo.get("id") if isinstance(repo, dict) else None
        delivery = await self.hooks.send_now(event, payload, installation_id=inst_id,
                                             repository_id=repo_id)
        return delivery.status_code

    async def redeliver(self, delivery_id: int) -> int:
        return (await self.hooks.redeliver(delivery_id)).status_code

    # -- reading state -----------------------------------------------------------------------------
    def pulls(self, repo: str, *, state: str = "open") -> list[dict[str, Any]]:
        r = self._repo(repo)
        return [self.ops.pull_json(r, i) for i in sorted(r.issues.values(),
                                                          key=lambda i: i.number)
                if i.pull is not None and (state == "all" or i.state == state)]

    def file(self, repo: str, path: str, ref: str | None = None) -> str | None:
        r = self._repo(repo)
        sha = r.resolve(ref or r.default_branch)
        commit = r.store.commit(sha) if sha else None
        if commit is None:
            return None
        entry = r.store.lookup(commit.tree, path)
        if entry is None or entry.type != "blob":
            return None
        return r.store.text(entry.sha)

    def branches(self, repo: str) -> list[str]:
        r = self._repo(repo)
        return sorted(ref[len("refs/heads/"):] for ref in r.refs if ref.startswith("refs/heads/"))

    def commit(self, repo: str, ref: str) -> dict[str, Any]:
        r = self._repo(repo)
        sha = r.resolve(ref)
        if sha is None:
            raise KeyError(ref)
        return shapes_git.commit(self.world, r, sha, files=True)

    def check_runs(self, repo: str, sha: str, name: str | None = None) -> list[dict[str, Any]]:
        r = self._repo(repo)
        resolved = r.resolve(sha) or sha
        out = []
        for run in r.check_runs:
            if run.head_sha == resolved and (name is None or run.name == name):
                data = shapes_checks.check_run(self.world, r, run)
                data["output"]["annotations"] = list(run.annotations)
                data["actions"] = list(run.actions)
                out.append(data)
        return out

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        r = self._repo(repo)
        item = self._issue(r, number)
        return [shapes_issues.comment(self.world, r, self.world.comments[c])
                for c in item.comment_ids if c in self.world.comments]

    def reactions(self, repo: str, comment_id: int) -> list[dict[str, Any]]:
        reactions = self.world.comments[comment_id].reactions
        return [shapes_issues.reaction(self.world, x) for x in reactions]

    def issues(self, repo: str, *, labels: Sequence[str] = ()) -> list[dict[str, Any]]:
        r = self._repo(repo)
        wanted = {label.lower() for label in labels}
        ordered = sorted(r.issues.values(), key=lambda i: i.number)
        return [shapes_issues.issue(self.world, r, i) for i in ordered
                if wanted <= {n.lower() for n in i.labels}]

    def deployments(self, repo: str) -> list[dict[str, Any]]:
        r = self._repo(repo)
        out = []
        for dep in r.deployments:
            data = shapes_deployments.deployment(self.world, r, dep)
            data["statuses"] = [shapes_deployments.deployment_status(self.world, r, dep, s)
                                for s in dep.statuses]
            out.append(data)
        return out

    def statuses(self, repo: str, sha: str) -> list[dict[str, Any]]:
        r = self._repo(repo)
        resolved = r.resolve(sha) or sha
        return [shapes_checks.status(self.world, s) for s in r.statuses if s.sha == resolved]

    def releases(self, repo: str) -> list[dict[str, Any]]:
        r = self._repo(repo)
        return [shapes_releases.release(self.world, r, rel) for rel in r.releases]

    def account(self, login: str) -> Account | None:
        return self.world.find_account(login)

    def issue_manifest_code(self, manifest: dict[str, Any]) -> str:
        code = secrets.token_hex(10)
        self.world.manifest_codes[code] = dict(manifest)
        return code

    def installation_token(self, installation_id: int) -> str:
        """Mint a token directly (for tests that skip the JWT exchange)."""
        from .state import Token

        inst = self.world.installations[installation_id]
        value = self.world.random_token("ghs_")
        self.world.tokens[value] = Token(value, inst.id, None, dict(inst.permissions),
                                         time.time() + self.token_ttl)
        return value

    def reset_counters(self) -> None:
        self.requests.reset()
        self.registry.requests.reset()
