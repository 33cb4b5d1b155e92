"""State changes shared by the REST routes and the acting helpers, with the webhooks they cause."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from . import (
    node_ids,
    shapes_accounts,
    shapes_checks,
    shapes_deployments,
    shapes_git,
    shapes_issues,
    shapes_releases,
    shapes_repos,
)
from .errors import ApiError, not_found
from .gitstore import FILE_MODE, Commit, MergeConflict, Signature
from .pull_merge import merge_info, pull_changes, pull_stats
from .push_payloads import push_body
from .required_checks import missing_required
from .state import (
    JSON,
    CheckRun,
    Comment,
    Deployment,
    DeploymentStatus,
    Issue,
    Label,
    Pull,
    Release,
    Repo,
    Review,
    Status,
    World,
    iso,
)
from .webhooks import Delivery, Webhooks


class Ops:
    def __init__(self, world: World, hooks: Webhooks) -> None:
        self.world = world
        self.hooks = hooks

    # -- people and signatures -------------------------------------------------------------------
    def signature(self, login: str) -> Signature:
        acct = self.world.account(login)
        email = f"{acct.id}+{acct.login}@users.noreply.github.com"
        return Signature(acct.name or acct.login, email, self.world.now())

    def web_flow(self) -> Signature:
        return Signature("GitHub", "noreply@github.com", self.world.now())

    # -- webhooks --------------------------------------------------------------------------------
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
        payload = {**body, **env}
        return self.hooks.emit(event, payload, installation_id=inst_id,
                               repository_id=repo.id if repo else None)

    # -- git -------------------------------------------------------------------------------------
    def write_commit(self, repo: Repo, parent: str | None, files: Mapping[str, bytes | None],
                     message: str, author: Signature, committer: Signature,
                     verified: bool) -> str:
        store = repo.store
        base: dict[str, tuple[str, str]] = {}
        if parent:
            commit = store.commit(parent)
            if commit is not None:
                base = store.flatten(commit.tree)
        for path, data in files.items():
            path = path.strip("/")
            if data is None:
                base.pop(path, None)
                for key in [k for k in base if k.startswith(path + "/")]:
                    del base[key]
            else:
                base[path] = (FILE_MODE, store.put_blob(data))
        tree = store.write_tree(base)
        return store.put_commit(Commit(tree, (parent,) if parent else (), message, author,
                                       committer, verified))

    def commit_files(self, repo: Repo, branch: str, files: Mapping[str, bytes | None],
                     message: str, actor: str, *, verified: bool) -> str:
        parent = repo.branch_sha(branch)
        author = self.signature(actor)
        committer = self.web_flow() if verified else author
        sha = self.write_commit(repo, parent, files, message, author, committer, verified)
        self.update_ref(repo, "refs/heads/" + branch, sha, actor)
        return sha

    def update_ref(self, repo: Repo, ref: str, new: str | None, actor: str, *,
                   forced: bool = False, emit: bool = True) -> None:
        old = repo.refs.get(ref)
        if new is None:
            repo.refs.pop(ref, None)
        else:
            repo.refs[ref] = new
        repo.pushed_at = self.world.now()
        if not emit or old == new:
            return
        self.emit("push", repo, actor, push_body(self.world, repo, ref, old, new, actor, forced))
        if not ref.startswith("refs/heads/") or new is None:
            return
        branch = ref[len("refs/heads/"):]
        self.emit("check_suite", repo, actor, {
            "action": "requested",
            "check_suite": self._suite_json(repo, new),
        })
        for item in list(repo.issues.values()):
            pr = item.pull
            if pr is None or item.state != "open" or pr.head_ref != branch:
                continue
            before = pr.head_sha
            pr.head_sha = new
            pr.base_sha = repo.branch_sha(pr.base_ref) or pr.base_sha
            item.updated_at = self.world.now()
            self.emit("pull_request", repo, actor, {
                "action": "synchronize", "number": item.number, "before": before,
                "after": new, "pull_request": self.pull_json(repo, item),
            })

    def _suite_json(self, repo: Repo, sha: str) -> JSON:
        suite = self.world.suite_for(repo, sha, self.world.app_id)
        return shapes_checks.check_suite(self.world, repo, suite.id)

    # -- pulls -----------------------------------------------------------------------------------
    def pull_json(self, repo: Repo, item: Issue) -> JSON:
        mergeable, state, _ = merge_info(repo, item)
        return shapes_issues.pull(self.world, repo, item, mergeable=mergeable,
                                  mergeable_state=state, stats=pull_stats(repo, item))

    def new_issue(self, repo: Repo, title: str, body: str | None, user: str,
                  labels: list[str] | None = None, pull: Pull | None = None) -> Issue:
        now = self.world.now()
        item = Issue(id=self.world.next_id(), number=repo.next_number, title=title, body=body,
                     user=user, created_at=now, updated_at=now, pull=pull)
        repo.next_number += 1
        repo.issues[item.number] = item
        for name in labels or []:
            self.ensure_label(repo, name)
            if name not in item.labels:
                item.labels.append(name)
        return item

    def open_pull(self, repo: Repo, head: str, base: str, title: str, body: str | None,
                  user: str, draft: bool = False) -> Issue:
        head_branch = head.split(":", 1)[-1]
        head_sha = repo.branch_sha(head_branch)
        base_sha = repo.branch_sha(base)
        errors: list[JSON] = []
        if head_sha is None:
            errors.append({"resource": "PullRequest", "field": "head", "code": "invalid"})
        if base_sha is None:
            errors.append({"resource": "PullRequest", "field": "base", "code": "invalid"})
        if errors or head_sha is None or base_sha is None:
            raise ApiError(422, "Validation Failed", errors)
        for other in repo.issues.values():
            if other.pull and other.state == "open" and other.pull.head_ref == head_branch \
                    and other.pull.base_ref == base:
                raise ApiError(422, "Validation Failed", [{
                    "resource": "PullRequest", "code": "custom",
                    "message": f"A pull request already exists for {repo.owner}:{head_branch}."}])
        if repo.store.is_ancestor(head_sha, base_sha):
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequest", "code": "custom",
                "message": f"No commits between {base} and {head_branch}"}])
        item = self.new_issue(repo, title, body, user,
                              pull=Pull(head_branch, base, head_sha, base_sha, draft=draft))
        self.emit("pull_request", repo, user, {
            "action": "opened", "number": item.number,
            "pull_request": self.pull_json(repo, item)})
        return item

    def set_issue_state(self, repo: Repo, item: Issue, state: str, actor: str,
                        reason: str | None = None) -> None:
        if state == item.state:
            return
        now = self.world.now()
        item.state = state
        item.updated_at = now
        if state == "closed":
            item.closed_at = now
            item.closed_by = actor
            item.state_reason = reason or "completed"
        else:
            item.closed_at = None
            item.closed_by = None
            item.state_reason = "reopened"
            if item.pull:
                item.pull.head_sha = repo.branch_sha(item.pull.head_ref) or item.pull.head_sha
        action = "closed" if state == "closed" else "reopened"
        if item.pull:
            self.emit("pull_request", repo, actor, {
                "action": action, "number": item.number,
                "pull_request": self.pull_json(repo, item)})
        else:
            self.emit("issues", repo, actor, {
                "action": action, "issue": shapes_issues.issue(self.world, repo, item)})

    def edit_issue(self, repo: Repo, item: Issue, actor: str, *, title: str | None = None,
                   body: str | None = None, body_set: bool = False) -> None:
        changes: JSON = {}
        if title is not None and title != item.title:
            changes["title"] = {"from": item.title}
            item.title = title
        if body_set and body != item.body:
            changes["body"] = {"from": item.body or ""}
            item.body = body
        if not changes:
            return
        item.updated_at = self.world.now()
        if item.pull:
            self.emit("pull_request", repo, actor, {
                "action": "edited", "number": item.number, "changes": changes,
                "pull_request": self.pull_json(repo, item)})
        else:
            self.emit("issues", repo, actor, {
                "action": "edited", "changes": changes,
                "issue": shapes_issues.issue(self.world, repo, item)})

    def merge(self, repo: Repo, item: Issue, *, method: str, sha: str | None, actor: str,
              title: str | None, message: str | None) -> str:
        pr = item.pull
        assert pr is not None
        if pr.merged or item.state != "open":
            raise ApiError(405, "Pull Request is not mergeable")
        if sha is not None and sha != pr.head_sha:
            raise ApiError(409, "Head branch was modified. Review and try the merge again.")
        mergeable, _, tree = merge_info(repo, item)
        if not mergeable or tree is None:
            raise ApiError(405, "Pull Request is not mergeable")
        missing = missing_required(repo, pr.head_sha)
        if missing:
            raise ApiError(405, f"Repository rule violations found\n\nRequired status check "
                                f"\"{missing[0]}\" is expected.")
        if method not in ("merge", "squash", "rebase"):
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequest", "field": "merge_method", "code": "invalid"}])
        store = repo.store
        base_tip = repo.branch_sha(pr.base_ref)
        assert base_tip is not None
        _, commits = pull_changes(repo, item)
        committer = self.web_flow()
        if method == "merge":
            msg = (title or f"Merge pull request #{item.number} from "
                   f"{repo.owner}/{pr.head_ref}") + "\n\n" + (message if message is not None
                                                               else item.title)
            new = store.put_commit(Commit(tree, (base_tip, pr.head_sha), msg.rstrip("\n"),
                                          self.signature(actor), committer, True))
        elif method == "squash":
            default_body = "\n\n".join(
                "* " + (store.commit(c).message if store.commit(c) else "")  # type: ignore[union-attr]
                for c in commits)
            msg = (title or f"{item.title} (#{item.number})")
            body = message if message is not None else default_body
            if body:
                msg += "\n\n" + body
            new = store.put_commit(Commit(tree, (base_tip,), msg, self.signature(item.user),
                                          committer, True))
        else:
            new = base_tip
            for sha_ in commits:
                original = store.commit(sha_)
                assert original is not None
                if len(original.parents) > 1:
                    raise ApiError(405, "This branch can't be rebased")
                parent = store.commit(original.parents[0]) if original.parents else None
                parent_tree = parent.tree if parent else None
                current = store.commit(new)
                assert current is not None
                try:
                    replay = store.three_way(parent_tree, current.tree, original.tree)
                except MergeConflict as exc:
                    raise ApiError(405, "This branch can't be rebased") from exc
                new = store.put_commit(Commit(replay, (new,), original.message,
                                              original.author, committer, True))
        now = self.world.now()
        pr.merged = True
        pr.merged_at = now
        pr.merged_by = actor
        pr.merge_commit_sha = new
        pr.base_sha = base_tip
        item.state = "closed"
        item.closed_at = now
        item.closed_by = actor
        item.updated_at = now
        self.update_ref(repo, "refs/heads/" + pr.base_ref, new, actor)
        self.emit("pull_request", repo, actor, {
            "action": "closed", "number": item.number,
            "pull_request": self.pull_json(repo, item)})
        return new

    def submit_review(self, repo: Repo, item: Issue, user: str, event: str, body: str,
                      commit_id: str | None) -> Review:
        pr = item.pull
        assert pr is not None
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
                  "COMMENT": "COMMENTED", "APPROVED": "APPROVED",
                  "CHANGES_REQUESTED": "CHANGES_REQUESTED", "COMMENTED": "COMMENTED"}
        if event not in states:
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequestReview", "field": "event", "code": "invalid"}])
        if event in ("REQUEST_CHANGES", "COMMENT") and not body:
            raise ApiError(422, "Unprocessable Entity", [{
                "resource": "PullRequestReview", "field": "body", "code": "missing"}])
        if user.lower() == item.user.lower() and event in ("APPROVE", "REQUEST_CHANGES"):
            raise ApiError(422, "Unprocessable Entity", [{
                "resource": "PullRequestReview", "code": "custom",
                "message": "Can not approve your own pull request"}])
        rev = Review(self.world.next_id(), user, states[event], body,
                     commit_id or pr.head_sha, self.world.now())
        pr.reviews.append(rev)
        self.emit("pull_request_review", repo, user, {
            "action": "submitted",
            "review": self.review_payload(repo, item.number, rev),
            "pull_request": self.pull_json(repo, item)})
        return rev

    def review_payload(self, repo: Repo, number: int, rev: Review) -> JSON:
        """Webhook payloads spell review states in lower case, unlike the REST API."""
        data = shapes_issues.review(self.world, repo, number, rev)
        data["state"] = rev.state.lower()
        return data

    def dismiss_review(self, repo: Repo, item: Issue, review_id: int, actor: str,
                       message: str) -> Review:
        pr = item.pull
        assert pr is not None
        rev = next((r for r in pr.reviews if r.id == review_id), None)
        if rev is None:
            raise not_found()
        rev.state = "DISMISSED"
        self.emit("pull_request_review", repo, actor, {
            "action": "dismissed",
            "review": self.review_payload(repo, item.number, rev),
            "pull_request": self.pull_json(repo, item)})
        return rev

    # -- issues, comments, labels ----------------------------------------------------------------
    def ensure_label(self, repo: Repo, name: str) -> Label:
        for existing in repo.labels.values():
            if existing.name.lower() == name.lower():
                return existing
        lab = Label(self.world.next_id(), name)
        repo.labels[name] = lab
        return lab

    def add_labels(self, repo: Repo, item: Issue, names: list[str], actor: str) -> None:
        for name in names:
            lab = self.ensure_label(repo, name)
            if lab.name in item.labels:
                continue
            item.labels.append(lab.name)
            item.updated_at = self.world.now()
            if item.pull:
                self.emit("pull_request", repo, actor, {
                    "action": "labeled", "number": item.number,
                    "label": shapes_issues.label(self.world, repo, lab),
                    "pull_request": self.pull_json(repo, item)})

    def remove_label(self, repo: Repo, item: Issue, name: str, actor: str) -> None:
        match = next((n for n in item.labels if n.lower() == name.lower()), None)
        if match is None:
            raise ApiError(404, "Label does not exist")
        item.labels.remove(match)
        item.updated_at = self.world.now()
        if item.pull and match in repo.labels:
            self.emit("pull_request", repo, actor, {
                "action": "unlabeled", "number": item.number,
                "label": shapes_issues.label(self.world, repo, repo.labels[match]),
                "pull_request": self.pull_json(repo, item)})

    def issue_payload(self, repo: Repo, item: Issue) -> JSON:
        data = shapes_issues.issue(self.world, repo, item)
        return data

    def add_comment(self, repo: Repo, item: Issue, user: str, body: str) -> Comment:
        now = self.world.now()
        com = Comment(self.world.next_id(), repo.full_name, item.number, user, body, now, now)
        self.world.comments[com.id] = com
        item.comment_ids.append(com.id)
        item.updated_at = now
        self.emit("issue_comment", repo, user, {
            "action": "created", "issue": self.issue_payload(repo, item),
            "comment": shapes_issues.comment(self.world, repo, com)})
        return com

    def edit_comment(self, repo: Repo, com: Comment, body: str, actor: str) -> None:
        old = com.body
        com.body = body
        com.updated_at = self.world.now()
        item = repo.issues[com.issue_number]
        self.emit("issue_comment", repo, actor, {
            "action": "edited", "changes": {"body": {"from": old}},
            "issue": self.issue_payload(repo, item),
            "comment": shapes_issues.comment(self.world, repo, com)})

    # -- checks and statuses ---------------------------------------------------------------------
    def check_run_event(self, repo: Repo, run: CheckRun, action: str, actor: str,
                        extra: JSON | None = None) -> None:
        data = shapes_checks.check_run(self.world, repo, run)
        data["check_suite"] = self._suite_json(repo, run.head_sha)
        self.emit("check_run", repo, actor, {"action": action, "check_run": data,
                                             **(extra or {})})

    def add_status(self, repo: Repo, sha: str, state: str, context: str,
                   description: str | None, target_url: str | None, actor: str) -> Status:
        now = self.world.now()
        st = Status(self.world.next_id(), sha, state, context, description, target_url, actor,
                    now, now)
        repo.statuses.append(st)
        commit = shapes_git.commit(self.world, repo, sha)
        branches = [
            {"name": r[len("refs/heads/"):],
             "commit": {"sha": s, "url": f"{self.world.api_url}/repos/{repo.full_name}"
                                         f"/commits/{s}"},
             "protected": False}
            for r, s in repo.refs.items() if r.startswith("refs/heads/") and s == sha
        ]
        self.emit("status", repo, actor, {
            "id": st.id, "sha": sha, "name": repo.full_name, "target_url": target_url,
            "context": context, "description": description, "state": state,
            "commit": commit, "branches": branches, "created_at": iso(now),
            "updated_at": iso(now), "avatar_url": None})
        return st

    # -- deployments -----------------------------------------------------------------------------
    def create_deployment(self, repo: Repo, *, ref: str, sha: str, environment: str,
                          payload: Any, description: str | None, actor: str, task: str,
                          transient: bool, production: bool) -> Deployment:
        now = self.world.now()
        dep = Deployment(self.world.next_id(), sha, ref, task, environment, environment,
                         payload, description, actor, now, now, transient, production)
        repo.deployments.append(dep)
        self.emit("deployment", repo, actor, {
            "action": "created",
            "deployment": shapes_deployments.deployment(self.world, repo, dep),
            "workflow": None, "workflow_run": None})
        return dep

    def add_deployment_status(self, repo: Repo, dep: Deployment, *, state: str, actor: str,
                              description: str, log_url: str, environment_url: str,
                              environment: str | None) -> DeploymentStatus:
        now = self.world.now()
        if environment:
            dep.environment = environment
        st = DeploymentStatus(self.world.next_id(), state, actor, description, dep.environment,
                              log_url, environment_url, now)
        dep.statuses.append(st)
        dep.updated_at = now
        self.emit("deployment_status", repo, actor, {
            "action": "created",
            "deployment_status": shapes_deployments.deployment_status(self.world, repo, dep, st),
            "deployment": shapes_deployments.deployment(self.world, repo, dep)})
        return st

    # -- releases --------------------------------------------------------------------------------
    def publish_release(self, repo: Repo, tag: str, *, author: str, prerelease: bool,
                        draft: bool, target: str | None, name: str | None,
                        body: str | None) -> Release:
        now = self.world.now()
        commitish = target or repo.default_branch
        if "refs/tags/" + tag not in repo.refs and not draft:
            sha = repo.resolve(commitish)
            if sha is None:
                raise ApiError(422, "Validation Failed", [{
                    "resource": "Release", "field": "target_commitish", "code": "invalid"}])
            self.update_ref(repo, "refs/tags/" + tag, sha, author)
        rel = Release(self.world.next_id(), tag, commitish, name or tag, body, draft,
                      prerelease, author, now, None if draft else now)
        repo.releases.append(rel)
        actions = ["created"] if draft else \
            ["created", "published", "prereleased" if prerelease else "released"]
        for action in actions:
            self.emit("release", repo, author, {
                "action": action, "release": shapes_releases.release(self.world, repo, rel)})
        return rel
