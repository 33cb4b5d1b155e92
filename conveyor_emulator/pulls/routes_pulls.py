"""Pull requests: list, create, update, merge, files, commits and reviews."""

from __future__ import annotations

from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.pulls import pull_merge
from conveyor_emulator.repos import shapes_git
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.state import Issue

router = Router()
R = "/repos/{owner}/{repo}/pulls"


def pull_or_404(ctx: Ctx) -> Issue:
    item = ctx.repo.issues.get(ctx.int_param("pull_number"))
    if item is None or item.pull is None:
        raise not_found()
    return item


@router.add("GET", R)
async def list_pulls(ctx: Ctx) -> Reply:
    repo = ctx.repo
    state = ctx.query.get("state", "open")
    head = ctx.query.get("head")
    base = ctx.query.get("base")
    items = [i for i in repo.issues.values() if i.pull is not None]
    if state != "all":
        items = [i for i in items if i.state == state]
    if head:
        owner, _, branch = head.partition(":")
        if not branch:
            owner, branch = repo.owner, owner
        items = [i for i in items if owner.lower() == repo.owner.lower()
                 and i.pull is not None and i.pull.head_ref == branch]
    if base:
        items = [i for i in items if i.pull is not None and i.pull.base_ref == base]
    # "List pull requests": `sort` defaults to `created`; `direction` to "`desc` when sort is
    # `created` or sort is not specified, otherwise `asc`" (the operation's parameters)
    sort = ctx.query.get("sort", "created")
    direction = ctx.query.get("direction", "desc" if sort == "created" else "asc")
    key = {"created": lambda i: (i.created_at, i.number),
           "updated": lambda i: (i.updated_at, i.number)}.get(sort, lambda i: (i.created_at,
                                                                                i.number))
    items.sort(key=key, reverse=direction == "desc")
    return ctx.page([
        shapes_issues.pull(ctx.world, repo, i, mergeable=None, mergeable_state="unknown")
        for i in items])


@router.add("POST", R)
async def create_pull(ctx: Ctx) -> Reply:
    body = ctx.json()
    head, base, title = body.get("head"), body.get("base"), body.get("title")
    if not isinstance(head, str) or not isinstance(base, str):
        raise ApiError(422, "Validation Failed", [
            {"resource": "PullRequest", "field": "head" if not isinstance(head, str) else "base",
             "code": "missing_field"}])
    if not isinstance(title, str) or not title:
        raise ApiError(422, "Validation Failed", [
            {"resource": "PullRequest", "field": "title", "code": "missing_field"}])
    owner = head.split(":", 1)[0] if ":" in head else ctx.repo.owner
    if owner.lower() != ctx.repo.owner.lower():
        raise ApiError(422, "Validation Failed", [
            {"resource": "PullRequest", "field": "head", "code": "invalid"}])
    item = ctx.ops.open_pull(ctx.repo, head, base, title, body.get("body"), ctx.actor,
                             bool(body.get("draft", False)))
    return Reply(201, ctx.ops.pull_json(ctx.repo, item))


@router.add("GET", R + "/{pull_number}")
async def get_pull(ctx: Ctx) -> Reply:
    return Reply(200, ctx.ops.pull_json(ctx.repo, pull_or_404(ctx)))


@router.add("PATCH", R + "/{pull_number}")
async def update_pull(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    body = ctx.json()
    ops = ctx.ops
    ops.edit_issue(ctx.repo, item, ctx.actor, title=body.get("title"),
                   body=body.get("body"), body_set="body" in body)
    state = body.get("state")
    if state in ("open", "closed"):
        assert item.pull is not None
        if item.pull.merged and state == "open":
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequest", "code": "custom",
                "message": "state cannot be changed. The pull request has been merged."}])
        ops.set_issue_state(ctx.repo, item, state, ctx.actor)
    if isinstance(body.get("base"), str):
        assert item.pull is not None
        if ctx.repo.branch_sha(body["base"]) is None:
            raise ApiError(422, "Validation Failed", [
                {"resource": "PullRequest", "field": "base", "code": "invalid"}])
        item.pull.base_ref = body["base"]
    return Reply(200, ops.pull_json(ctx.repo, item))


@router.add("PUT", R + "/{pull_number}/merge")
async def merge_pull(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    body = ctx.body if isinstance(ctx.body, dict) else {}
    sha = ctx.ops.merge(ctx.repo, item, method=body.get("merge_method", "merge"),
                        sha=body.get("sha"), actor=ctx.actor, title=body.get("commit_title"),
                        message=body.get("commit_message"))
    return Reply(200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


@router.add("GET", R + "/{pull_number}/merge")
async def check_merged(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    assert item.pull is not None
    if not item.pull.merged:
        raise not_found()
    return Reply(204, None)


@router.add("GET", R + "/{pull_number}/files")
async def pull_files(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    assert item.pull is not None
    changes, _ = pull_merge.pull_changes(ctx.repo, item)
    return ctx.page([shapes_git.diff_entry(ctx.world, ctx.repo, item.pull.head_sha, c)
                     for c in changes[:3000]])


@router.add("GET", R + "/{pull_number}/commits")
async def pull_commits(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    _, commits = pull_merge.pull_changes(ctx.repo, item)
    return ctx.page([shapes_git.commit(ctx.world, ctx.repo, s) for s in commits[:250]])


@router.add("GET", R + "/{pull_number}/reviews")
async def list_reviews(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    assert item.pull is not None
    return ctx.page([shapes_issues.review(ctx.world, ctx.repo, item.number, r)
                     for r in item.pull.reviews])


@router.add("POST", R + "/{pull_number}/reviews")
async def create_review(ctx: Ctx) -> Reply:
    item = pull_or_404(ctx)
    body = ctx.json()
    event = body.get("event", "COMMENT")
    rev = ctx.ops.submit_review(ctx.repo, item, ctx.actor, str(event), body.get("body") or "",
                                body.get("commit_id"))
    return Reply(200, shapes_issues.review(ctx.world, ctx.repo, item.number, rev))
