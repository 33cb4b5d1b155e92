"""Repositories, contents, commits, compare, branches and tags."""

from __future__ import annotations

import base64
import binascii
import posixpath
from datetime import datetime

from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.repos import shapes_git, shapes_repos
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.gitstore import SYMLINK_MODE, Commit, Signature, TreeEntry
from conveyor_emulator.store.state import JSON, Repo

router = Router()
R = "/repos/{owner}/{repo}"


def resolve_or_404(repo: Repo, ref: str) -> str:
    sha = repo.resolve(ref)
    if sha is None:
        raise ApiError(404, f"No commit found for SHA: {ref}")
    return sha


def ref_param(ctx: Ctx) -> str:
    return ctx.query.get("ref") or ctx.repo.default_branch


@router.add("GET", R)
async def get_repo(ctx: Ctx) -> Reply:
    return Reply(200, shapes_repos.full_repository(ctx.world, ctx.repo))


CONTENTS_LIMIT = 1024 * 1024


@router.add("GET", R + "/contents/{path}")
async def get_contents(ctx: Ctx) -> Reply:
    repo = ctx.repo
    ref = ref_param(ctx)
    sha = repo.resolve(ref)
    if sha is None:
        raise ApiError(404, f"No commit found for the ref {ref}")
    commit = repo.store.commit(sha)
    assert commit is not None
    path = ctx.params["path"].strip("/")
    entry = repo.store.lookup(commit.tree, path)
    if entry is None:
        raise not_found()
    if entry.type == "blob" and entry.mode == SYMLINK_MODE:
        # "Get repository content": "If the content is a symlink and the symlink's target is
        # a normal file in the repository, then the API responds with the content of the
        # file. Otherwise, the API responds with an object describing the symlink itself."
        target = _link_target(repo, commit.tree, path, entry.sha)
        if target is None:
            return Reply(200, shapes_repos.content_symlink(ctx.world, repo, path, entry.sha,
                                                           ref))
        path, entry = target
    if entry.type == "blob":
        blob = repo.store.blob(entry.sha)
        if blob is not None and len(blob.data) > CONTENTS_LIMIT:
            # "Get repository content": files of 1-100 MB are served only with the raw or
            # object media types (not emulated); the default JSON answer is a 403.
            raise ApiError(403, "This API returns blobs up to 1 MB in size. The requested blob "
                           "is too large to fetch via the API, but you can use the raw media "
                           "type or the git/blobs endpoint to get it.",
                           [{"resource": "Blob", "field": "data", "code": "too_large"}])
        return Reply(200, shapes_repos.content_file(ctx.world, repo, path, entry.sha, ref))
    tree = repo.store.tree(entry.sha)
    assert tree is not None
    listing = [
        shapes_repos.dir_entry(
            ctx.world, repo, f"{path}/{name}" if path else name, e.type, e.sha, ref
        )
        for name, e in sorted(tree.entries.items())
    ]
    return Reply(200, listing)


def _link_target(repo: Repo, tree: str, path: str, link: str) -> tuple[str, TreeEntry] | None:
    """The regular file a symbolic link names, within the repository; None otherwise."""
    named = repo.store.text(link)
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), named))
    if named.startswith("/") or joined == ".." or joined.startswith("../"):
        return None
    entry = repo.store.lookup(tree, joined)
    if entry is None or entry.type != "blob" or entry.mode == SYMLINK_MODE:
        return None
    return joined, entry


def _signature(data: object, default: Signature) -> Signature:
    if not isinstance(data, dict):
        return default
    date = default.date
    if isinstance(data.get("date"), str):
        date = datetime.fromisoformat(data["date"].replace("Z", "+00:00"))
    return Signature(str(data.get("name", default.name)), str(data.get("email", default.email)),
                     date)


def decode_content(value: object) -> bytes:
    if not isinstance(value, str):
        raise ApiError(422, "Invalid request.\n\n\"content\" wasn't supplied.")
    try:
        return base64.b64decode(value, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ApiError(422, "content is not valid Base64") from exc


@router.add("PUT", R + "/contents/{path}")
async def put_contents(ctx: Ctx) -> Reply:
    repo = ctx.repo
    body = ctx.json()
    path = ctx.params["path"].strip("/")
    message = body.get("message")
    if not isinstance(message, str):
        raise ApiError(422, "Invalid request.\n\n\"message\" wasn't supplied.")
    data = decode_content(body.get("content"))
    branch = body.get("branch") or repo.default_branch
    parent = repo.branch_sha(branch)
    if parent is None and repo.refs:
        raise ApiError(404, f"Branch {branch} not found")
    existing = None
    if parent:
        commit = repo.store.commit(parent)
        assert commit is not None
        existing = repo.store.lookup(commit.tree, path)
    given = body.get("sha")
    if existing is not None and existing.type == "tree":
        raise ApiError(422, "Invalid request.\n\npath is a directory")
    if existing is not None and given is None:
        raise ApiError(422, "Invalid request.\n\n\"sha\" wasn't supplied.")
    if existing is not None and given != existing.sha:
        raise ApiError(409, f"{path} does not match {given}")
    if existing is None and given is not None:
        raise ApiError(422, f"{path} does not match {given}")
    ops = ctx.ops
    author_default = ops.signature(ctx.actor)
    author = _signature(body.get("author"), author_default)
    custom = "author" in body or "committer" in body
    committer, signed = ((_signature(body.get("committer"), author), False) if custom
                         else ops.web_committer(author))
    sha = ops.write_commit(repo, parent, {path: data}, message, author, committer,
                           verified=signed)
    ops.update_ref(repo, "refs/heads/" + branch, sha, ctx.actor)
    new_commit = repo.store.commit(sha)
    assert new_commit is not None
    entry = repo.store.lookup(new_commit.tree, path)
    assert entry is not None
    content = shapes_repos.content_file(
        ctx.world, repo, path, entry.sha, branch, with_content=False
    )
    git = shapes_git.git_commit(ctx.world, repo, sha)
    return Reply(201 if existing is None else 200, {"content": content, "commit": git})


COMMIT_FILES_PER_PAGE = 300
COMMIT_FILES_LIMIT = 3000


@router.add("GET", R + "/commits/{ref}")
async def get_commit(ctx: Ctx) -> Reply:
    """"If there are more than 300 files in the commit diff [...] the response will include
    pagination link headers for the remaining files, up to a limit of 3000 files. Each page
    contains the static commit information" (GitHub's description of this operation)."""
    sha = resolve_or_404(ctx.repo, ctx.params["ref"])
    body = shapes_git.commit(ctx.world, ctx.repo, sha, files=True)
    files = body["files"][:COMMIT_FILES_LIMIT]
    if len(files) <= COMMIT_FILES_PER_PAGE:
        return Reply(200, body)
    try:
        page = max(1, int(ctx.query.get("page", "1")))
    except ValueError as exc:
        raise ApiError(422, "Validation Failed") from exc
    last = -(-len(files) // COMMIT_FILES_PER_PAGE)
    body["files"] = files[(page - 1) * COMMIT_FILES_PER_PAGE: page * COMMIT_FILES_PER_PAGE]
    base = str(ctx.request.url.with_query(None))
    links = [f'<{base}?page={page + 1}>; rel="next"', f'<{base}?page={last}>; rel="last"'] \
        if page < last else []
    if page > 1:
        links += [f'<{base}?page=1>; rel="first"', f'<{base}?page={page - 1}>; rel="prev"']
    return Reply(200, body, {"Link": ", ".join(links)} if links else {})


def _touches(repo: Repo, sha: str, path: str) -> bool:
    commit = repo.store.commit(sha)
    assert commit is not None
    mine = repo.store.lookup(commit.tree, path)
    if not commit.parents:
        return mine is not None
    for parent in commit.parents:
        pc = repo.store.commit(parent)
        theirs = repo.store.lookup(pc.tree, path) if pc else None
        if theirs == mine:
            return False
    return True


@router.add("GET", R + "/commits")
async def list_commits(ctx: Ctx) -> Reply:
    repo = ctx.repo
    start = ctx.query.get("sha") or repo.default_branch
    sha = repo.resolve(start)
    if sha is None:
        if not repo.refs:
            raise ApiError(409, "Git Repository is empty.")
        raise not_found()
    history = repo.store.ancestors(sha)
    path = ctx.query.get("path")
    if path:
        path = path.strip("/")
        history = [s for s in history if _touches(repo, s, path)]
    author = ctx.query.get("author")
    if author:
        history = [s for s in history
                   if author.lower() in repo.store.commit(s).author.email.lower()  # type: ignore[union-attr]
                   ]
    return ctx.page([shapes_git.commit(ctx.world, repo, s) for s in history])


@router.add("GET", R + "/compare/{basehead}")
async def compare(ctx: Ctx) -> Reply:
    repo = ctx.repo
    basehead = ctx.params["basehead"]
    if "..." in basehead:
        base_ref, head_ref = basehead.split("...", 1)
    elif ".." in basehead:
        base_ref, head_ref = basehead.split("..", 1)
    else:
        raise not_found()
    base = resolve_or_404(repo, base_ref)
    head = resolve_or_404(repo, head_ref)
    store = repo.store
    merge_base = store.merge_base(base, head)
    ahead = store.commits_between(base, head)
    behind = store.commits_between(head, base)
    mb_commit = store.commit(merge_base) if merge_base else None
    head_commit = store.commit(head)
    assert head_commit is not None
    changes = store.diff(mb_commit.tree if mb_commit else None, head_commit.tree)
    if not ahead and not behind:
        status = "identical"
    elif not behind:
        status = "ahead"
    elif not ahead:
        status = "behind"
    else:
        status = "diverged"
    api = f"{ctx.world.api_url}/repos/{repo.full_name}"
    html = f"{ctx.world.web_url}/{repo.full_name}/compare/{base_ref}...{head_ref}"
    body: JSON = {
        "url": f"{api}/compare/{basehead}",
        "html_url": html,
        "permalink_url": f"{ctx.world.web_url}/{repo.full_name}/compare/{base}...{head}",
        "diff_url": html + ".diff",
        "patch_url": html + ".patch",
        "base_commit": shapes_git.commit(ctx.world, repo, base),
        "merge_base_commit": shapes_git.commit(ctx.world, repo, merge_base or base),
        "status": status,
        "ahead_by": len(ahead),
        "behind_by": len(behind),
        "total_commits": len(ahead),
        "commits": [shapes_git.commit(ctx.world, repo, s) for s in ahead[:250]],
        "files": [shapes_git.diff_entry(ctx.world, repo, head, c) for c in changes[:300]],
    }
    return Reply(200, body)


@router.add("GET", R + "/commits/{commit_sha}/pulls")
async def commit_pulls(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = resolve_or_404(repo, ctx.params["commit_sha"])
    found = []
    for item in sorted(repo.issues.values(), key=lambda i: i.number):
        pr = item.pull
        if pr is None:
            continue
        if pr.merge_commit_sha == sha or (
            repo.store.commit(pr.head_sha) and repo.store.is_ancestor(sha, pr.head_sha)
            and not repo.store.is_ancestor(sha, pr.base_sha)
        ):
            found.append(shapes_issues.pull(ctx.world, repo, item, mergeable=None,
                                     mergeable_state="unknown"))
    return ctx.page(found)


def branch_json(ctx: Ctx, repo: Repo, name: str, sha: str) -> JSON:
    api = f"{ctx.world.api_url}/repos/{repo.full_name}"
    required = list(repo.required_checks) if name == repo.default_branch else []
    contexts = list(dict.fromkeys(check.context for check in required))
    return {
        "name": name,
        "commit": shapes_git.commit(ctx.world, repo, sha),
        "_links": {"self": f"{api}/branches/{name}",
                   "html": f"{ctx.world.web_url}/{repo.full_name}/tree/{name}"},
        "protected": bool(required),
        # "Get a branch" (`branch-with-protection`): each required check with the app that
        # must provide it, `app_id: null` where any source may
        "protection": {
            "enabled": bool(required),
            "required_status_checks": {
                "enforcement_level": "non_admins" if required else "off",
                "contexts": contexts,
                "checks": [{"context": c.context, "app_id": c.app_id} for c in required],
            },
        },
        "protection_url": f"{api}/branches/{name}/protection",
    }


@router.add("GET", R + "/rules/branches/{branch}")
async def branch_rules(ctx: Ctx) -> Reply:
    """"Get rules for a branch": the active rules of every ruleset that applies to it (here:
    the default branch's), each with the ruleset it comes from. Readable with `metadata:
    read`; a GitHub Enterprise Server before rulesets (3.11) answers 404.

    Shapes as GitHub's REST description (`repository-rule-detailed` in
    github-rest.trimmed.json, from @octokit/openapi) has them: a
    `required_status_checks` rule requires `required_status_checks` and
    `strict_required_status_checks_policy` ("Require branches to be up to date before
    merging"), each check `context` and an optional `integration_id`
    (`repository-rule-params-status-check-configuration`); a `pull_request` rule requires
    `dismiss_stale_reviews_on_push`, `require_code_owner_review`,
    `require_last_push_approval` ("Require approval of the most recent reviewable push"),
    `required_approving_review_count` and `required_review_thread_resolution`
    (`repository-rule-pull-request`)."""
    if not ctx.world.rulesets_supported:
        raise ApiError(404, "Not Found")
    repo = ctx.repo
    if repo.branch_sha(ctx.params["branch"]) is None:
        return ctx.page([])
    rules: list[JSON] = []
    for ruleset in repo.rulesets if ctx.params["branch"] == repo.default_branch else []:
        source = {"ruleset_source_type": "Repository", "ruleset_source": repo.full_name,
                  "ruleset_id": ruleset.id}
        if ruleset.checks:
            rules.append({"type": "required_status_checks", "parameters": {
                "strict_required_status_checks_policy": ruleset.strict,
                "required_status_checks": [
                    {"context": c.context, **({"integration_id": c.app_id}
                                              if c.app_id is not None else {})}
                    for c in ruleset.checks],
            }, **source})
        if ruleset.pull_request is not None:
            rules.append({"type": "pull_request", "parameters": dict(ruleset.pull_request),
                          **source})
    return ctx.page(rules)


@router.add("GET", R + "/branches/{branch}")
async def get_branch(ctx: Ctx) -> Reply:
    repo = ctx.repo
    name = ctx.params["branch"]
    sha = repo.branch_sha(name)
    if sha is None:
        raise ApiError(404, "Branch not found")
    return Reply(200, branch_json(ctx, repo, name, sha))


@router.add("GET", R + "/tags")
async def list_tags(ctx: Ctx) -> Reply:
    repo = ctx.repo
    tags = sorted(
        ((ref[len("refs/tags/"):], repo.peel(sha)) for ref, sha in repo.refs.items()
         if ref.startswith("refs/tags/")),
        key=lambda t: _commit_date(repo, t[1]), reverse=True)
    return ctx.page([shapes_git.tag_entry(ctx.world, repo, n, s) for n, s in tags])


def _commit_date(repo: Repo, sha: str) -> float:
    commit: Commit | None = repo.store.commit(sha)
    return commit.committer.date.timestamp() if commit else 0.0
