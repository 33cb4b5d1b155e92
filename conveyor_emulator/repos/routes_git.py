"""Git data: refs, commits, trees, blobs and annotated tags."""

from __future__ import annotations

import base64

from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.repos import shapes_git
from conveyor_emulator.repos.routes_repos import _signature, decode_content
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store import node_ids
from conveyor_emulator.store.gitstore import FILE_MODE, Commit
from conveyor_emulator.store.state import JSON

router = Router()
R = "/repos/{owner}/{repo}/git"


def _full_ref(ref: str) -> str:
    ref = ref.strip("/")
    return ref if ref.startswith("refs/") else "refs/" + ref


@router.add("GET", R + "/ref/{ref}")
async def get_ref(ctx: Ctx) -> Reply:
    ref = _full_ref(ctx.params["ref"])
    sha = ctx.repo.refs.get(ref)
    if sha is None:
        raise not_found()
    return Reply(200, shapes_git.git_ref(ctx.world, ctx.repo, ref, sha))


@router.add("GET", R + "/matching-refs/{ref}")
async def matching_refs(ctx: Ctx) -> Reply:
    prefix = _full_ref(ctx.params["ref"])
    refs = sorted((r, s) for r, s in ctx.repo.refs.items() if r.startswith(prefix))
    return ctx.page([shapes_git.git_ref(ctx.world, ctx.repo, r, s) for r, s in refs])


@router.add("POST", R + "/refs")
async def create_ref(ctx: Ctx) -> Reply:
    body = ctx.json()
    ref, sha = body.get("ref"), body.get("sha")
    if not isinstance(ref, str) or not ref.startswith("refs/") or ref.count("/") < 2:
        raise ApiError(422, "Reference name must start with 'refs/' and have at least two "
                            "slashes.")
    if not isinstance(sha, str) or ctx.repo.store.get(sha) is None:
        raise ApiError(422, "Object does not exist")
    if ref in ctx.repo.refs:
        raise ApiError(422, "Reference already exists")
    ctx.ops.update_ref(ctx.repo, ref, sha, ctx.actor)
    return Reply(201, shapes_git.git_ref(ctx.world, ctx.repo, ref, sha))


@router.add("PATCH", R + "/refs/{ref}")
async def update_ref(ctx: Ctx) -> Reply:
    repo = ctx.repo
    ref = _full_ref(ctx.params["ref"])
    body = ctx.json()
    sha = body.get("sha")
    force = bool(body.get("force", False))
    current = repo.refs.get(ref)
    if current is None:
        raise ApiError(422, "Reference does not exist")
    if not isinstance(sha, str) or repo.store.get(sha) is None:
        raise ApiError(422, "Object does not exist")
    fast_forward = repo.store.is_ancestor(current, sha) if repo.store.commit(sha) else False
    if not force and not fast_forward:
        raise ApiError(422, "Update is not a fast forward")
    ctx.ops.update_ref(repo, ref, sha, ctx.actor, forced=not fast_forward)
    return Reply(200, shapes_git.git_ref(ctx.world, repo, ref, sha))


@router.add("DELETE", R + "/refs/{ref}")
async def delete_ref(ctx: Ctx) -> Reply:
    ref = _full_ref(ctx.params["ref"])
    if ref not in ctx.repo.refs:
        raise ApiError(422, "Reference does not exist")
    ctx.ops.update_ref(ctx.repo, ref, None, ctx.actor)
    return Reply(204, None)


@router.add("GET", R + "/commits/{commit_sha}")
async def get_git_commit(ctx: Ctx) -> Reply:
    sha = ctx.params["commit_sha"]
    if ctx.repo.store.commit(sha) is None:
        raise not_found()
    return Reply(200, shapes_git.git_commit(ctx.world, ctx.repo, sha))


@router.add("POST", R + "/commits")
async def create_git_commit(ctx: Ctx) -> Reply:
    repo = ctx.repo
    body = ctx.json()
    tree, message = body.get("tree"), body.get("message")
    parents = body.get("parents", [])
    if not isinstance(message, str):
        raise ApiError(422, "Invalid request.\n\n\"message\" wasn't supplied.")
    if not isinstance(tree, str) or repo.store.tree(tree) is None:
        raise ApiError(422, "Tree SHA does not exist")
    if not isinstance(parents, list) or any(
            not isinstance(p, str) or repo.store.commit(p) is None for p in parents):
        raise ApiError(422, "Parent SHA does not exist or is not a commit object")
    ops = ctx.ops
    custom = "author" in body or "committer" in body
    author = _signature(body.get("author"), ops.signature(ctx.actor))
    committer, signed = ((_signature(body.get("committer"), author), False) if custom
                         else ops.web_committer(author))
    sha = repo.store.put_commit(Commit(tree, tuple(parents), message, author, committer,
                                       signed))
    return Reply(201, shapes_git.git_commit(ctx.world, repo, sha))


def tree_json(ctx: Ctx, sha: str, recursive: bool) -> JSON:
    repo = ctx.repo
    api = f"{ctx.world.api_url}/repos/{repo.full_name}"
    entries = []
    items = repo.store.walk(sha) if recursive else (
        (name, entry) for name, entry in sorted(repo.store.tree(sha).entries.items())  # type: ignore[union-attr]
    )
    for path, entry in items:
        item: JSON = {"path": path, "mode": "040000" if entry.type == "tree" else entry.mode,
                      "type": entry.type, "sha": entry.sha,
                      "url": f"{api}/git/{'trees' if entry.type == 'tree' else 'blobs'}/"
                             f"{entry.sha}"}
        if entry.type == "blob":
            blob = repo.store.blob(entry.sha)
            item["size"] = len(blob.data) if blob else 0
        entries.append(item)
    # "Get a tree": with `recursive`, the tree array holds at most 100,000 entries (7 MB); past
    # that GitHub answers the first ones and `truncated: true`.
    limit = ctx.world.tree_entry_limit
    truncated = recursive and len(entries) > limit
    return {"sha": sha, "url": f"{api}/git/trees/{sha}",
            "tree": entries[:limit] if truncated else entries, "truncated": truncated}


@router.add("GET", R + "/trees/{tree_sha}")
async def get_tree(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = ctx.params["tree_sha"]
    if repo.store.tree(sha) is None:
        resolved = repo.resolve(sha)
        commit = repo.store.commit(resolved) if resolved else None
        if commit is None:
            raise not_found()
        sha = commit.tree
    recursive = ctx.query.get("recursive") not in (None, "", "0", "false")
    return Reply(200, tree_json(ctx, sha, recursive))


@router.add("POST", R + "/trees")
async def create_tree(ctx: Ctx) -> Reply:
    repo = ctx.repo
    body = ctx.json()
    entries = body.get("tree")
    if not isinstance(entries, list):
        raise ApiError(422, "Invalid tree info")
    files: dict[str, tuple[str, str]] = {}
    base = body.get("base_tree")
    if base is not None:
        if not isinstance(base, str) or repo.store.tree(base) is None:
            raise ApiError(422, "base_tree is not a valid tree oid")
        files = repo.store.flatten(base)
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ApiError(422, "Invalid tree info")
        path = entry["path"].strip("/")
        mode = str(entry.get("mode", FILE_MODE))
        kind = entry.get("type", "blob")
        if "content" in entry and entry["content"] is not None:
            if entry.get("sha") is not None:
                # @octokit/openapi, "Create a tree": "Using both `tree.sha` and `content`
                # will return an error."
                raise ApiError(422, "Invalid tree info: use either tree.sha or content")
            files[path] = (mode, repo.store.put_blob(str(entry["content"]).encode()))
            continue
        sha = entry.get("sha", "missing")
        if sha is None:
            files.pop(path, None)
            for key in [k for k in files if k.startswith(path + "/")]:
                del files[key]
            continue
        if not isinstance(sha, str) or repo.store.get(sha) is None:
            raise ApiError(422, f"tree.sha {sha} is not a valid blob")
        if kind == "tree":
            for sub, value in repo.store.flatten(sha).items():
                files[f"{path}/{sub}"] = value
        else:
            files[path] = (mode, sha)
    sha = repo.store.write_tree(files)
    return Reply(201, tree_json(ctx, sha, False))


@router.add("GET", R + "/blobs/{file_sha}")
async def get_blob(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = ctx.params["file_sha"]
    blob = repo.store.blob(sha)
    if blob is None:
        raise not_found()
    # GitHub's "Get a blob" returns base64 broken into lines, as the contents API does (its
    # documented example ends "…YmxvYg==\n"): a reader must ignore the line breaks.
    plain = base64.b64encode(blob.data).decode()
    encoded = "".join(f"{plain[i:i + 60]}\n" for i in range(0, len(plain), 60))
    return Reply(200, {
        "sha": sha, "node_id": node_ids.node_id("Blob", sha), "size": len(blob.data),
        "url": f"{ctx.world.api_url}/repos/{repo.full_name}/git/blobs/{sha}",
        "content": encoded, "encoding": "base64"})


@router.add("POST", R + "/blobs")
async def create_blob(ctx: Ctx) -> Reply:
    repo = ctx.repo
    body = ctx.json()
    content = body.get("content")
    if not isinstance(content, str):
        raise ApiError(422, "Invalid request.\n\n\"content\" wasn't supplied.")
    data = decode_content(content) if body.get("encoding") == "base64" else content.encode()
    sha = repo.store.put_blob(data)
    return Reply(201, {"sha": sha,
                       "url": f"{ctx.world.api_url}/repos/{repo.full_name}/git/blobs/{sha}"})


@router.add("GET", R + "/tags/{tag_sha}")
async def get_tag(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = ctx.params["tag_sha"]
    tag = repo.store.tag(sha)
    if tag is None:
        raise not_found()
    api = f"{ctx.world.api_url}/repos/{repo.full_name}"
    plural = "commits" if tag.object_type == "commit" else "tags"
    return Reply(200, {
        "sha": sha, "node_id": node_ids.node_id("Tag", sha), "tag": tag.tag,
        "message": tag.message, "url": f"{api}/git/tags/{sha}",
        "tagger": shapes_git.git_person(tag.tagger),
        "object": {"type": tag.object_type, "sha": tag.object,
                   "url": f"{api}/git/{plural}/{tag.object}"},
        "verification": {"verified": False, "reason": "unsigned", "signature": None,
                         "payload": None, "verified_at": None},
    })
