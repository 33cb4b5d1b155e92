"""The `push` webhook's payload and its commit entries, which differ from the REST API's commits."""

from __future__ import annotations

from conveyor_emulator.accounts import shapes_accounts
from conveyor_emulator.repos import shapes_repos
from conveyor_emulator.store.gitstore import Signature
from conveyor_emulator.store.state import JSON, Repo, iso
from conveyor_emulator.store.world import World


def push_body(world: World, repo: Repo, ref: str, old: str | None, new: str | None,
              actor: str, forced: bool) -> JSON:
    zero = "0" * 40
    commits: list[JSON] = []
    target = repo.peel(new) if new is not None else None
    if target is not None and repo.store.commit(target) is not None:
        shas = (repo.store.commits_between(old, target)
                if old and repo.store.commit(old) and ref.startswith("refs/heads/")
                else [target] if ref.startswith("refs/heads/") else [])
        commits = [push_commit(world, repo, s) for s in shas[-20:]]
    head = push_commit(world, repo, target) if target and repo.store.commit(target) else None
    acct = world.account(actor)
    repo_json = shapes_repos.repository(world, repo)
    repo_json["pushed_at"] = int(world.now().timestamp())
    repo_json["created_at"] = int(repo.created_at.timestamp())
    repo_json["stargazers"] = 0
    repo_json["master_branch"] = repo.default_branch
    owner = shapes_accounts.user(world, repo.owner)
    repo_json["owner"] = {**owner, "name": repo.owner, "email": None}
    return {
        "ref": ref,
        "before": old or zero,
        "after": new or zero,
        "created": old is None,
        "deleted": new is None,
        "forced": forced,
        "base_ref": None,
        "compare": f"{world.web_url}/{repo.full_name}/compare/"
                   f"{(old or zero)[:12]}...{(new or zero)[:12]}",
        "commits": commits,
        "head_commit": head,
        "pusher": {"name": acct.login, "email": f"{acct.login}@users.noreply.github.com"},
        "repository": repo_json,
    }


def push_commit(world: World, repo: Repo, sha: str) -> JSON:
    commit = repo.store.commit(sha)
    assert commit is not None
    parent = repo.store.commit(commit.parents[0]) if commit.parents else None
    changes = repo.store.diff(parent.tree if parent else None, commit.tree)

    def person(sig: Signature) -> JSON:
        out: JSON = {"name": sig.name, "email": sig.email}
        login = sig.email.split("@", 1)[0].split("+", 1)[-1]
        if world.find_account(login):
            out["username"] = login
        if sig.name == "GitHub":
            out["username"] = "web-flow"
        return out

    return {
        "id": sha,
        "tree_id": commit.tree,
        "distinct": True,
        "message": commit.message,
        "timestamp": iso(commit.committer.date),
        "url": f"{world.web_url}/{repo.full_name}/commit/{sha}",
        "author": person(commit.author),
        "committer": person(commit.committer),
        "added": [c.filename for c in changes if c.status == "added"],
        "removed": [c.filename for c in changes if c.status == "removed"],
        "modified": [c.filename for c in changes if c.status in ("modified", "renamed")],
    }
