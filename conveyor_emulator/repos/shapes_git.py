"""GitHub's JSON for commits, git objects, refs, tags and diffs."""

from __future__ import annotations

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.store.gitstore import Commit, FileChange, Signature
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, Repo, iso
from conveyor_emulator.store.world import World


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


def tag_entry(world: World, repo: Repo, name: str, sha: str) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "name": name,
        "commit": {"sha": sha, "url": f"{api}/commits/{sha}"},
        "zipball_url": f"{api}/zipball/refs/tags/{name}",
        "tarball_url": f"{api}/tarball/refs/tags/{name}",
        "node_id": node_id("Tag", f"{repo.id}:{name}"),
    }
