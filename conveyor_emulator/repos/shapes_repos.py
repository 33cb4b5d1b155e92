"""GitHub's JSON for repositories and their contents."""

from __future__ import annotations

import base64

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, Repo, iso
from conveyor_emulator.store.world import World


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


def content_symlink(world: World, repo: Repo, path: str, sha: str, ref: str) -> JSON:
    """A symbolic link whose target is not a regular file of the repository, as the contents
    API describes it ("content-symlink")."""
    out = content_file(world, repo, path, sha, ref, with_content=False)
    del out["encoding"]
    out["type"] = "symlink"
    out["target"] = repo.store.text(sha)
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
