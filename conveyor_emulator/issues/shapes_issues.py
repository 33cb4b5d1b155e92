"""GitHub's JSON for issues, pull requests, comments, labels, reactions and reviews."""

from __future__ import annotations

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.repos.shapes_repos import repository
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, Comment, Issue, Label, Reaction, Repo, Review, iso
from conveyor_emulator.store.world import World

REACTION_KEYS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket"]


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
