"""JSON shapes of GitHub's REST resources, rendered from the emulator's state."""

from __future__ import annotations

import base64
import zlib

from .gitstore import Commit, FileChange, Signature
from .state import (
    JSON,
    Account,
    CheckRun,
    Comment,
    Deployment,
    DeploymentStatus,
    Installation,
    Issue,
    Label,
    Package,
    PackageVersion,
    Reaction,
    Release,
    Repo,
    Review,
    Status,
    WorkflowRun,
    World,
    iso,
)

REACTION_KEYS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket"]


def node_id(kind: str, ident: int | str) -> str:
    raw = f"{kind}:{ident}".encode()
    return kind[:2].upper() + "_" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def user(world: World, login: str | Account) -> JSON:
    acct = login if isinstance(login, Account) else world.account(login)
    slug = acct.login.removesuffix("[bot]")
    api = world.api_url
    base = f"{api}/users/{acct.login}"
    html = f"{world.web_url}/apps/{slug}" if acct.type == "Bot" else f"{world.web_url}/{acct.login}"
    return {
        "login": acct.login,
        "id": acct.id,
        "node_id": acct.node_id,
        "avatar_url": f"{world.web_url}/avatars/{acct.id}",
        "gravatar_id": "",
        "url": base,
        "html_url": html,
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": acct.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def public_user(world: World, acct: Account) -> JSON:
    out = user(world, acct)
    created = iso(acct.created_at or world.now())
    out.update({
        "name": acct.name, "company": None, "blog": "", "location": None,
        "email": acct.email, "hireable": None, "bio": None, "twitter_username": None,
        "public_repos": sum(1 for r in world.repos.values()
                            if r.owner.lower() == acct.login.lower() and not r.private),
        "public_gists": 0, "followers": 0, "following": 0,
        "created_at": created, "updated_at": created,
    })
    return out


def organization(world: World, acct: Account) -> JSON:
    base = f"{world.api_url}/orgs/{acct.login}"
    return {
        "login": acct.login, "id": acct.id, "node_id": acct.node_id, "url": base,
        "repos_url": f"{base}/repos", "events_url": f"{base}/events",
        "hooks_url": f"{base}/hooks", "issues_url": f"{base}/issues",
        "members_url": f"{base}/members{{/member}}",
        "public_members_url": f"{base}/public_members{{/member}}",
        "avatar_url": f"{world.web_url}/avatars/{acct.id}", "description": None,
    }


def repository(world: World, repo: Repo) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    html = f"{world.web_url}/{repo.full_name}"
    created = iso(repo.created_at)
    pushed = iso(repo.pushed_at or repo.created_at)
    open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
    owner_acct = world.account(repo.owner)
    return {
        "id": repo.id,
        "node_id": node_id("Repository", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": user(world, owner_acct),
        "html_url": html,
        "description": None,
        "fork": False,
        "url": api,
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "assignees_url": f"{api}/assignees{{/user}}",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "comments_url": f"{api}/comments{{/number}}",
        "commits_url": f"{api}/commits{{/sha}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "contributors_url": f"{api}/contributors",
        "deployments_url": f"{api}/deployments",
        "downloads_url": f"{api}/downloads",
        "events_url": f"{api}/events",
        "forks_url": f"{api}/forks",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_url": f"git://{world.web_url.split('://', 1)[-1]}/{repo.full_name}.git",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "keys_url": f"{api}/keys{{/key_id}}",
        "labels_url": f"{api}/labels{{/name}}",
        "languages_url": f"{api}/languages",
        "merges_url": f"{api}/merges",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "releases_url": f"{api}/releases{{/id}}",
        "ssh_url": f"git@{world.web_url.split('://', 1)[-1]}:{repo.full_name}.git",
        "stargazers_url": f"{api}/stargazers",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "tags_url": f"{api}/tags",
        "teams_url": f"{api}/teams",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "clone_url": f"{html}.git",
        "mirror_url": None,
        "hooks_url": f"{api}/hooks",
        "svn_url": html,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "size": 0,
        "default_branch": repo.default_branch,
        "open_issues_count": open_issues,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": True,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if repo.private else "public",
        "pushed_at": pushed,
        "created_at": created,
        "updated_at": pushed,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
        "forks": 0,
        "open_issues": open_issues,
        "watchers": 0,
    }


def full_repository(world: World, repo: Repo, viewer_permission: str = "admin") -> JSON:
    out = repository(world, repo)
    order = ["read", "triage", "write", "maintain", "admin"]
    level = order.index(viewer_permission) if viewer_permission in order else 0
    out.update({
        "network_count": 0,
        "subscribers_count": 0,
        "permissions": {
            "admin": level >= 4, "maintain": level >= 3, "push": level >= 2,
            "triage": level >= 1, "pull": True,
        },
        "allow_squash_merge": True,
        "allow_merge_commit": True,
        "allow_rebase_merge": True,
        "allow_auto_merge": False,
        "delete_branch_on_merge": False,
    })
    if world.account(repo.owner).type == "Organization":
        out["organization"] = user(world, repo.owner)
    return out


def label(world: World, repo: Repo, lab: Label) -> JSON:
    return {
        "id": lab.id,
        "node_id": node_id("Label", lab.id),
        "url": f"{world.api_url}/repos/{repo.full_name}/labels/{lab.name}",
        "name": lab.name,
        "description": lab.description,
        "color": lab.color,
        "default": lab.default,
    }


def reactions_rollup(world: World, url: str, reactions: list[Reaction]) -> JSON:
    out: JSON = {"url": url, "total_count": len(reactions)}
    for key in REACTION_KEYS:
        out[key] = sum(1 for r in reactions if r.content == key)
    return out


def author_association(world: World, repo: Repo, login: str) -> str:
    if login.lower() == repo.owner.lower():
        return "OWNER"
    perm = world.permission(repo, login)
    if perm in ("admin", "maintain", "write", "triage"):
        return "COLLABORATOR" if world.account(repo.owner).type == "User" else "MEMBER"
    return "NONE"


def issue(world: World, repo: Repo, item: Issue) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    url = f"{api}/issues/{item.number}"
    kind = "pull" if item.pull else "issues"
    out: JSON = {
        "id": item.id,
        "node_id": node_id("Issue", item.id),
        "url": url,
        "repository_url": api,
        "labels_url": f"{url}/labels{{/name}}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "html_url": f"{world.web_url}/{repo.full_name}/{kind}/{item.number}",
        "number": item.number,
        "state": item.state,
        "state_reason": item.state_reason,
        "title": item.title,
        "body": item.body,
        "user": user(world, item.user),
        "labels": [label(world, repo, repo.labels[n]) for n in item.labels if n in repo.labels],
        "assignee": user(world, item.assignees[0]) if item.assignees else None,
        "assignees": [user(world, a) for a in item.assignees],
        "milestone": None,
        "locked": item.locked,
        "active_lock_reason": None,
        "comments": len(item.comment_ids),
        "closed_at": iso(item.closed_at),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "closed_by": user(world, item.closed_by) if item.closed_by else None,
        "author_association": author_association(world, repo, item.user),
        "reactions": reactions_rollup(world, f"{url}/reactions", []),
        "timeline_url": f"{url}/timeline",
        "performed_via_github_app": None,
    }
    if item.pull:
        pr_url = f"{api}/pulls/{item.number}"
        html = f"{world.web_url}/{repo.full_name}/pull/{item.number}"
        out["pull_request"] = {
            "url": pr_url, "html_url": html, "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch", "merged_at": iso(item.pull.merged_at),
        }
    return out


def comment(world: World, repo: Repo, item: Comment) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    url = f"{api}/issues/comments/{item.id}"
    target = repo.issues.get(item.issue_number)
    kind = "pull" if target and target.pull else "issues"
    return {
        "id": item.id,
        "node_id": node_id("IssueComment", item.id),
        "url": url,
        "html_url": f"{world.web_url}/{repo.full_name}/{kind}/{item.issue_number}"
                    f"#issuecomment-{item.id}",
        "issue_url": f"{api}/issues/{item.issue_number}",
        "body": item.body,
        "user": user(world, item.user),
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "author_association": author_association(world, repo, item.user),
        "reactions": reactions_rollup(world, f"{url}/reactions", item.reactions),
        "performed_via_github_app": None,
    }


def reaction(world: World, item: Reaction) -> JSON:
    return {
        "id": item.id,
        "node_id": node_id("Reaction", item.id),
        "user": user(world, item.user),
        "content": item.content,
        "created_at": iso(item.created_at),
    }


def git_person(sig: Signature) -> JSON:
    return {"name": sig.name, "email": sig.email, "date": iso(sig.date)}


def verification(commit: Commit) -> JSON:
    if commit.verified:
        return {"verified": True, "reason": "valid", "signature": "-----BEGIN PGP SIGNATURE-----",
                "payload": "tree", "verified_at": iso(commit.committer.date)}
    return {"verified": False, "reason": "unsigned", "signature": None, "payload": None,
            "verified_at": None}


def git_commit(world: World, repo: Repo, sha: str) -> JSON:
    commit = repo.store.commit(sha)
    assert commit is not None
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "sha": sha,
        "node_id": node_id("Commit", sha),
        "url": f"{api}/git/commits/{sha}",
        "html_url": f"{world.web_url}/{repo.full_name}/commit/{sha}",
        "author": git_person(commit.author),
        "committer": git_person(commit.committer),
        "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
        "message": commit.message,
        "parents": [
            {"sha": p, "url": f"{api}/git/commits/{p}",
             "html_url": f"{world.web_url}/{repo.full_name}/commit/{p}"}
            for p in commit.parents
        ],
        "verification": verification(commit),
    }


def _login_for(world: World, sig: Signature) -> JSON | None:
    if sig.name == "GitHub" and sig.email == "noreply@github.com":
        return user(world, "web-flow")
    login = sig.email.split("@", 1)[0].split("+", 1)[-1]
    acct = world.find_account(login) or world.find_account(sig.name)
    return user(world, acct) if acct else None


def diff_entry(world: World, repo: Repo, ref: str, change: FileChange) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    sha = change.new_sha or change.old_sha or ""
    out: JSON = {
        "sha": sha,
        "filename": change.filename,
        "status": change.status,
        "additions": change.additions,
        "deletions": change.deletions,
        "changes": change.changes,
        "blob_url": f"{world.web_url}/{repo.full_name}/blob/{ref}/{change.filename}",
        "raw_url": f"{world.web_url}/{repo.full_name}/raw/{ref}/{change.filename}",
        "contents_url": f"{api}/contents/{change.filename}?ref={ref}",
    }
    if change.patch:
        out["patch"] = change.patch
    if change.previous_filename:
        out["previous_filename"] = change.previous_filename
    return out


def commit(world: World, repo: Repo, sha: str, *, files: bool = False) -> JSON:
    data = repo.store.commit(sha)
    assert data is not None
    api = f"{world.api_url}/repos/{repo.full_name}"
    html = f"{world.web_url}/{repo.full_name}/commit/{sha}"
    out: JSON = {
        "sha": sha,
        "node_id": node_id("Commit", sha),
        "url": f"{api}/commits/{sha}",
        "html_url": html,
        "comments_url": f"{api}/commits/{sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{sha}",
            "author": git_person(data.author),
            "committer": git_person(data.committer),
            "message": data.message,
            "tree": {"sha": data.tree, "url": f"{api}/git/trees/{data.tree}"},
            "comment_count": 0,
            "verification": verification(data),
        },
        "author": _login_for(world, data.author),
        "committer": _login_for(world, data.committer),
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}",
             "html_url": f"{world.web_url}/{repo.full_name}/commit/{p}"}
            for p in data.parents
        ],
    }
    if files:
        parent = repo.store.commit(data.parents[0]) if data.parents else None
        changes = repo.store.diff(parent.tree if parent else None, data.tree)
        out["files"] = [diff_entry(world, repo, sha, c) for c in changes]
        adds = sum(c.additions for c in changes)
        dels = sum(c.deletions for c in changes)
        out["stats"] = {"additions": adds, "deletions": dels, "total": adds + dels}
    return out


def git_ref(world: World, repo: Repo, ref: str, sha: str) -> JSON:
    obj = repo.store.get(sha)
    kind = "tag" if obj is not None and type(obj).__name__ == "Tag" else "commit"
    api = f"{world.api_url}/repos/{repo.full_name}"
    plural = "tags" if kind == "tag" else "commits"
    return {
        "ref": ref,
        "node_id": node_id("Ref", f"{repo.id}:{ref}"),
        "url": f"{api}/git/{ref}",
        "object": {"type": kind, "sha": sha, "url": f"{api}/git/{plural}/{sha}"},
    }


def check_run(world: World, repo: Repo, run: CheckRun) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    suite = next(s for s in repo.check_suites if s.id == run.suite_id)
    pulls = [
        pull_ref(world, repo, i) for i in repo.issues.values()
        if i.pull and i.state == "open" and i.pull.head_sha == run.head_sha
    ]
    output = dict(run.output)
    return {
        "id": run.id,
        "node_id": node_id("CheckRun", run.id),
        "head_sha": run.head_sha,
        "external_id": run.external_id or "",
        "url": f"{api}/check-runs/{run.id}",
        "html_url": f"{world.web_url}/{repo.full_name}/runs/{run.id}",
        "details_url": run.details_url or f"{world.web_url}/{repo.full_name}/runs/{run.id}",
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at),
        "output": {
            "title": output.get("title"),
            "summary": output.get("summary"),
            "text": output.get("text"),
            "annotations_count": len(run.annotations),
            "annotations_url": f"{api}/check-runs/{run.id}/annotations",
        },
        "name": run.name,
        "check_suite": {"id": suite.id},
        "app": app(world, run.app_id),
        "pull_requests": pulls,
    }


def check_suite(world: World, repo: Repo, suite_id: int) -> JSON:
    suite = next(s for s in repo.check_suites if s.id == suite_id)
    runs = [r for r in repo.check_runs if r.suite_id == suite_id]
    status = "completed" if runs and all(r.status == "completed" for r in runs) else "queued"
    if runs and status != "completed":
        status = "in_progress"
    conclusions = [r.conclusion for r in runs if r.conclusion]
    conclusion = None
    if status == "completed":
        conclusion = next((c for c in ("failure", "action_required", "cancelled", "timed_out")
                           if c in conclusions), "success")
    api = f"{world.api_url}/repos/{repo.full_name}"
    commit_data = repo.store.commit(suite.head_sha)
    head_commit: JSON | None = None
    if commit_data is not None:
        head_commit = {
            "id": suite.head_sha, "tree_id": commit_data.tree, "message": commit_data.message,
            "timestamp": iso(commit_data.committer.date),
            "author": {"name": commit_data.author.name, "email": commit_data.author.email},
            "committer": {"name": commit_data.committer.name,
                          "email": commit_data.committer.email},
        }
    before = commit_data.parents[0] if commit_data and commit_data.parents else None
    return {
        "id": suite.id,
        "node_id": node_id("CheckSuite", suite.id),
        "head_branch": suite.head_branch,
        "head_sha": suite.head_sha,
        "status": status,
        "conclusion": conclusion,
        "url": f"{api}/check-suites/{suite.id}",
        "before": before,
        "after": suite.head_sha,
        "pull_requests": [
            pull_ref(world, repo, i) for i in repo.issues.values()
            if i.pull and i.state == "open" and i.pull.head_sha == suite.head_sha
        ],
        "app": app(world, suite.app_id),
        "created_at": iso(suite.created_at),
        "updated_at": iso(suite.updated_at),
        "latest_check_runs_count": len(runs),
        "check_runs_url": f"{api}/check-suites/{suite.id}/check-runs",
        "head_commit": head_commit,
        "rerequestable": True,
        "runs_rerequestable": True,
    }


def pull_ref(world: World, repo: Repo, item: Issue) -> JSON:
    assert item.pull is not None
    api = f"{world.api_url}/repos/{repo.full_name}"
    ref_repo = {"id": repo.id, "url": api, "name": repo.name}
    return {
        "id": item.id,
        "number": item.number,
        "url": f"{api}/pulls/{item.number}",
        "head": {"ref": item.pull.head_ref, "sha": item.pull.head_sha, "repo": ref_repo},
        "base": {"ref": item.pull.base_ref, "sha": item.pull.base_sha, "repo": ref_repo},
    }


def app(world: World, app_id: int | None = None) -> JSON:
    created = "2024-01-01T00:00:00Z"
    owner = next((a for a in world.accounts.values() if a.type == "Organization"), None)
    app_id = world.app_id if app_id is None else app_id
    slug = world.app_slug if app_id == world.app_id else world.other_apps[app_id]
    return {
        "id": app_id,
        "slug": slug,
        "client_id": f"Iv1.{app_id:016x}",
        "node_id": node_id("App", app_id),
        "owner": user(world, owner or world.account("conveyor-dev")),
        "name": slug.capitalize(),
        "description": "",
        "external_url": world.web_url,
        "html_url": f"{world.web_url}/apps/{slug}",
        "created_at": created,
        "updated_at": created,
        "permissions": {
            "checks": "write", "contents": "write", "deployments": "write",
            "issues": "write", "metadata": "read", "packages": "read",
            "pull_requests": "write", "statuses": "read", "members": "read",
            "attestations": "read", "actions": "read",
        },
        # only names every webhook schema's enum admits (merge_group and package are not)
        "events": ["check_run", "check_suite", "deployment", "deployment_status", "issues",
                   "issue_comment", "pull_request", "pull_request_review", "push",
                   "registry_package", "release", "status"],
        "installations_count": len(world.installations),
    }


def installation(world: World, inst: Installation) -> JSON:
    acct = world.account(inst.account)
    account = user(world, acct)
    # GitHub's description types `account` as simple-user *and* enterprise (allOf)
    account.update({"name": acct.name or acct.login, "slug": acct.login.lower(),
                    "description": None, "website_url": None,
                    "created_at": iso(acct.created_at or inst.created_at),
                    "updated_at": iso(acct.created_at or inst.created_at)})
    return {
        "id": inst.id,
        "account": account,
        "repository_selection": "all" if inst.repo_ids is None else "selected",
        "access_tokens_url": f"{world.api_url}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{world.api_url}/installation/repositories",
        "html_url": f"{world.web_url}/settings/installations/{inst.id}",
        "app_id": world.app_id,
        "app_slug": world.app_slug,
        "client_id": f"Iv1.{world.app_id:016x}",
        "target_id": acct.id,
        "target_type": "Organization" if acct.type == "Organization" else "User",
        "permissions": dict(inst.permissions),
        "events": list(inst.events),
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def status(world: World, item: Status) -> JSON:
    return {
        "url": f"{world.api_url}/statuses/{item.sha}",
        "avatar_url": f"{world.web_url}/avatars/{world.account(item.creator).id}",
        "id": item.id,
        "node_id": node_id("StatusContext", item.id),
        "state": item.state,
        "description": item.description,
        "target_url": item.target_url,
        "context": item.context,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "creator": user(world, item.creator),
    }


def deployment(world: World, repo: Repo, dep: Deployment) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "url": f"{api}/deployments/{dep.id}",
        "id": dep.id,
        "node_id": node_id("Deployment", dep.id),
        "sha": dep.sha,
        "ref": dep.ref,
        "task": dep.task,
        "payload": dep.payload,
        "original_environment": dep.original_environment,
        "environment": dep.environment,
        "description": dep.description,
        "creator": user(world, dep.creator),
        "created_at": iso(dep.created_at),
        "updated_at": iso(dep.updated_at),
        "statuses_url": f"{api}/deployments/{dep.id}/statuses",
        "repository_url": api,
        "transient_environment": dep.transient_environment,
        "production_environment": dep.production_environment,
        "performed_via_github_app": performed_via(world, dep.creator),
    }


def performed_via(world: World, login: str) -> JSON | None:
    """The app behind a bot user's deployment or deployment status (null for people)."""
    app_id = world.app_of(login)
    return None if app_id is None else app(world, app_id)


def deployment_status(world: World, repo: Repo, dep: Deployment, st: DeploymentStatus) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "url": f"{api}/deployments/{dep.id}/statuses/{st.id}",
        "id": st.id,
        "node_id": node_id("DeploymentStatus", st.id),
        "state": st.state,
        "creator": user(world, st.creator),
        "description": st.description,
        "environment": st.environment,
        "target_url": st.log_url,
        "created_at": iso(st.created_at),
        "updated_at": iso(st.created_at),
        "deployment_url": f"{api}/deployments/{dep.id}",
        "repository_url": api,
        "environment_url": st.environment_url,
        "log_url": st.log_url,
        "performed_via_github_app": performed_via(world, st.creator),
    }


def release(world: World, repo: Repo, rel: Release) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    html = f"{world.web_url}/{repo.full_name}"
    return {
        "url": f"{api}/releases/{rel.id}",
        "html_url": f"{html}/releases/tag/{rel.tag_name}",
        "assets_url": f"{api}/releases/{rel.id}/assets",
        "upload_url": f"{world.web_url}/uploads/repos/{repo.full_name}/releases/{rel.id}"
                      "/assets{?name,label}",
        "tarball_url": f"{api}/tarball/{rel.tag_name}",
        "zipball_url": f"{api}/zipball/{rel.tag_name}",
        "id": rel.id,
        "node_id": node_id("Release", rel.id),
        "tag_name": rel.tag_name,
        "target_commitish": rel.target_commitish,
        "name": rel.name,
        "body": rel.body,
        "draft": rel.draft,
        "prerelease": rel.prerelease,
        "immutable": False,
        "created_at": iso(rel.created_at),
        "updated_at": iso(rel.published_at or rel.created_at),
        "published_at": iso(rel.published_at),
        "author": user(world, rel.author),
        "assets": [],
    }


def tag_entry(world: World, repo: Repo, name: str, sha: str) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "name": name,
        "commit": {"sha": sha, "url": f"{api}/commits/{sha}"},
        "zipball_url": f"{api}/zipball/refs/tags/{name}",
        "tarball_url": f"{api}/tarball/refs/tags/{name}",
        "node_id": node_id("Tag", f"{repo.id}:{name}"),
    }


def package(world: World, pkg: Package) -> JSON:
    owner = world.account(pkg.owner)
    kind = "orgs" if owner.type == "Organization" else "users"
    out: JSON = {
        "id": pkg.id,
        "name": pkg.name,
        "package_type": "container",
        "url": f"{world.api_url}/{kind}/{pkg.owner}/packages/container/{pkg.name}",
        "html_url": f"{world.web_url}/{kind}/{pkg.owner}/packages/container/package/{pkg.name}",
        "version_count": len(pkg.versions),
        "visibility": "public",
        "owner": user(world, owner),
        "created_at": iso(pkg.created_at),
        "updated_at": iso(pkg.versions[-1].updated_at if pkg.versions else pkg.created_at),
    }
    if pkg.source_repo:
        src = world.repos.get(pkg.source_repo.lower())
        if src:
            out["repository"] = repository(world, src)
    return out


def package_version(world: World, pkg: Package, ver: PackageVersion) -> JSON:
    owner = world.account(pkg.owner)
    kind = "orgs" if owner.type == "Organization" else "users"
    html_kind = "orgs" if owner.type == "Organization" else "users"
    base = f"{world.web_url}/{html_kind}/{pkg.owner}/packages/container"
    return {
        "id": ver.id,
        "name": ver.name,
        "url": f"{world.api_url}/{kind}/{pkg.owner}/packages/container/{pkg.name}"
               f"/versions/{ver.id}",
        "package_html_url": f"{base}/package/{pkg.name}",
        "html_url": f"{base}/{pkg.name}/{ver.id}",
        "created_at": iso(ver.created_at),
        "updated_at": iso(ver.updated_at),
        "metadata": {"package_type": "container", "container": {"tags": list(ver.tags)}},
    }


def workflow_run(world: World, repo: Repo, run: WorkflowRun) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    url = f"{api}/actions/runs/{run.id}"
    data = repo.store.commit(run.head_sha)
    head_commit: JSON | None = None
    if data is not None:
        head_commit = {
            "id": run.head_sha, "tree_id": data.tree, "message": data.message,
            "timestamp": iso(data.committer.date),
            "author": {"name": data.author.name, "email": data.author.email},
            "committer": {"name": data.committer.name, "email": data.committer.email},
        }
    workflow_id = zlib.crc32(f"{repo.full_name}:{run.path}".encode()) % 10_000_000
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WorkflowRun", run.id),
        "check_suite_id": run.id + 1,
        "check_suite_node_id": node_id("CheckSuite", run.id + 1),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "run_number": run.run_number,
        "run_attempt": 1,
        "display_title": run.name,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": workflow_id,
        "url": url,
        "html_url": f"{world.web_url}/{repo.full_name}/actions/runs/{run.id}",
        "pull_requests": [],
        "created_at": iso(run.created_at),
        "updated_at": iso(run.created_at),
        "run_started_at": iso(run.created_at),
        "actor": user(world, run.actor),
        "triggering_actor": user(world, run.actor),
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api}/check-suites/{run.id + 1}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "workflow_url": f"{api}/actions/workflows/{workflow_id}",
        "head_commit": head_commit,
        "repository": minimal_repository(world, repo),
        "head_repository": minimal_repository(world, repo),
    }


def minimal_repository(world: World, repo: Repo) -> JSON:
    full = repository(world, repo)
    keep = {
        "archive_url", "assignees_url", "blobs_url", "branches_url", "collaborators_url",
        "comments_url", "commits_url", "compare_url", "contents_url", "contributors_url",
        "deployments_url", "description", "downloads_url", "events_url", "fork", "forks_url",
        "full_name", "git_commits_url", "git_refs_url", "git_tags_url", "hooks_url",
        "html_url", "id", "node_id", "issue_comment_url", "issue_events_url", "issues_url",
        "keys_url", "labels_url", "languages_url", "merges_url", "milestones_url", "name",
        "notifications_url", "owner", "private", "pulls_url", "releases_url",
        "stargazers_url", "statuses_url", "subscribers_url", "subscription_url", "tags_url",
        "teams_url", "trees_url", "url",
    }
    return {k: v for k, v in full.items() if k in keep}


def review(world: World, repo: Repo, number: int, rev: Review) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    html = f"{world.web_url}/{repo.full_name}/pull/{number}"
    return {
        "id": rev.id,
        "node_id": node_id("PullRequestReview", rev.id),
        "user": user(world, rev.user),
        "body": rev.body,
        "state": rev.state,
        "html_url": f"{html}#pullrequestreview-{rev.id}",
        "pull_request_url": f"{api}/pulls/{number}",
        "_links": {"html": {"href": f"{html}#pullrequestreview-{rev.id}"},
                   "pull_request": {"href": f"{api}/pulls/{number}"}},
        "submitted_at": iso(rev.submitted_at),
        "commit_id": rev.commit_id,
        "author_association": author_association(world, repo, rev.user),
    }


def content_file(world: World, repo: Repo, path: str, sha: str, ref: str,
                 with_content: bool = True) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    blob = repo.store.blob(sha)
    data = blob.data if blob else b""
    html = f"{world.web_url}/{repo.full_name}/blob/{ref}/{path}"
    git = f"{api}/git/blobs/{sha}"
    url = f"{api}/contents/{path}?ref={ref}"
    out: JSON = {
        "type": "file",
        "encoding": "base64",
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "url": url,
        "git_url": git,
        "html_url": html,
        "download_url": f"{world.web_url}/{repo.full_name}/raw/{ref}/{path}",
        "_links": {"self": url, "git": git, "html": html},
    }
    if with_content:
        encoded = base64.b64encode(data).decode()
        out["content"] = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60))
        out["content"] += "\n" if encoded else ""
    return out


def dir_entry(world: World, repo: Repo, path: str, kind: str, sha: str, ref: str) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    if kind == "blob":
        return content_file(world, repo, path, sha, ref, with_content=False)
    url = f"{api}/contents/{path}?ref={ref}"
    html = f"{world.web_url}/{repo.full_name}/tree/{ref}/{path}"
    git = f"{api}/git/trees/{sha}"
    return {
        "type": "dir", "size": 0, "name": path.rsplit("/", 1)[-1], "path": path, "sha": sha,
        "url": url, "git_url": git, "html_url": html, "download_url": None,
        "_links": {"self": url, "git": git, "html": html},
    }


def pull(world: World, repo: Repo, item: Issue, *, mergeable: bool | None,
         mergeable_state: str, stats: tuple[int, int, int, int] | None = None) -> JSON:
    """A pull request; `stats` is (commits, additions, deletions, changed_files)."""
    pr = item.pull
    assert pr is not None
    api = f"{world.api_url}/repos/{repo.full_name}"
    url = f"{api}/pulls/{item.number}"
    html = f"{world.web_url}/{repo.full_name}/pull/{item.number}"
    repo_json = repository(world, repo)
    owner = user(world, repo.owner)

    def side(ref: str, sha: str) -> JSON:
        return {"label": f"{repo.owner}:{ref}", "ref": ref, "sha": sha, "user": owner,
                "repo": repo_json}

    out: JSON = {
        "url": url,
        "id": item.id,
        "node_id": node_id("PullRequest", item.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{api}/issues/{item.number}",
        "commits_url": f"{url}/commits",
        "review_comments_url": f"{url}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "comments_url": f"{api}/issues/{item.number}/comments",
        "statuses_url": f"{api}/statuses/{pr.head_sha}",
        "number": item.number,
        "state": item.state,
        "locked": item.locked,
        "title": item.title,
        "user": user(world, item.user),
        "body": item.body,
        "labels": [label(world, repo, repo.labels[n]) for n in item.labels if n in repo.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "closed_at": iso(item.closed_at),
        "merged_at": iso(pr.merged_at),
        "merge_commit_sha": pr.merge_commit_sha,
        "assignee": user(world, item.assignees[0]) if item.assignees else None,
        "assignees": [user(world, a) for a in item.assignees],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": side(pr.head_ref, pr.head_sha),
        "base": side(pr.base_ref, pr.base_sha),
        "_links": {
            "self": {"href": url}, "html": {"href": html},
            "issue": {"href": f"{api}/issues/{item.number}"},
            "comments": {"href": f"{api}/issues/{item.number}/comments"},
            "review_comments": {"href": f"{url}/comments"},
            "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
            "commits": {"href": f"{url}/commits"},
            "statuses": {"href": f"{api}/statuses/{pr.head_sha}"},
        },
        "author_association": author_association(world, repo, item.user),
        "auto_merge": None,
        "draft": pr.draft,
    }
    if stats is not None:
        commits, adds, dels, files = stats
        out.update({
            "merged": pr.merged,
            "mergeable": mergeable,
            "rebaseable": mergeable,
            "mergeable_state": mergeable_state,
            "merged_by": user(world, pr.merged_by) if pr.merged_by else None,
            "comments": len(item.comment_ids),
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": commits,
            "additions": adds,
            "deletions": dels,
            "changed_files": files,
        })
    return out
