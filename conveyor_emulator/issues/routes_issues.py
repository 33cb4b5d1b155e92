"""Issues, comments, labels and reactions."""

from __future__ import annotations

from datetime import datetime

from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.state import Comment, Issue, Label, Reaction

router = Router()
R = "/repos/{owner}/{repo}"
REACTIONS = set(shapes_issues.REACTION_KEYS)


def issue_or_404(ctx: Ctx) -> Issue:
    item = ctx.repo.issues.get(ctx.int_param("issue_number"))
    if item is None:
        raise not_found()
    return item


def comment_or_404(ctx: Ctx) -> Comment:
    com = ctx.world.comments.get(ctx.int_param("comment_id"))
    if com is None or com.repo.lower() != ctx.repo.full_name.lower():
        raise not_found()
    return com


@router.add("POST", R + "/issues")
async def create_issue(ctx: Ctx) -> Reply:
    body = ctx.json()
    title = body.get("title")
    if not isinstance(title, str) or not title:
        raise ApiError(422, "Validation Failed", [
            {"resource": "Issue", "field": "title", "code": "missing_field"}])
    labels = [str(n) if not isinstance(n, dict) else str(n.get("name"))
              for n in body.get("labels") or []]
    item = ctx.ops.new_issue(ctx.repo, title, body.get("body"), ctx.actor, labels)
    item.assignees = [str(a) for a in body.get("assignees") or []]
    ctx.ops.emit("issues", ctx.repo, ctx.actor, {
        "action": "opened", "issue": shapes_issues.issue(ctx.world, ctx.repo, item)})
    return Reply(201, shapes_issues.issue(ctx.world, ctx.repo, item))


@router.add("GET", R + "/issues")
async def list_issues(ctx: Ctx) -> Reply:
    repo = ctx.repo
    state = ctx.query.get("state", "open")
    items = list(repo.issues.values())
    if state != "all":
        items = [i for i in items if i.state == state]
    wanted = [n.strip().lower() for n in ctx.query.get("labels", "").split(",") if n.strip()]
    if wanted:
        items = [i for i in items if all(w in [n.lower() for n in i.labels] for w in wanted)]
    creator = ctx.query.get("creator")
    if creator:
        items = [i for i in items if i.user.lower() == creator.lower()]
    since = ctx.query.get("since")
    if since:
        when = datetime.fromisoformat(since.replace("Z", "+00:00"))
        items = [i for i in items if i.updated_at >= when]
    sort = ctx.query.get("sort", "created")
    direction = ctx.query.get("direction", "desc")
    items.sort(key=lambda i: (i.updated_at if sort == "updated" else i.created_at, i.number),
               reverse=direction == "desc")
    return ctx.page([shapes_issues.issue(ctx.world, repo, i) for i in items])


@router.add("GET", R + "/issues/{issue_number}")
async def get_issue(ctx: Ctx) -> Reply:
    return Reply(200, shapes_issues.issue(ctx.world, ctx.repo, issue_or_404(ctx)))


@router.add("PATCH", R + "/issues/{issue_number}")
async def update_issue(ctx: Ctx) -> Reply:
    item = issue_or_404(ctx)
    body = ctx.json()
    ops = ctx.ops
    ops.edit_issue(ctx.repo, item, ctx.actor, title=body.get("title"), body=body.get("body"),
                   body_set="body" in body)
    if "labels" in body and isinstance(body["labels"], list):
        item.labels = []
        ops.add_labels(ctx.repo, item, [str(n) for n in body["labels"]], ctx.actor)
    if "assignees" in body and isinstance(body["assignees"], list):
        item.assignees = [str(a) for a in body["assignees"]]
    state = body.get("state")
    if state in ("open", "closed"):
        ops.set_issue_state(ctx.repo, item, state, ctx.actor, body.get("state_reason"))
    return Reply(200, shapes_issues.issue(ctx.world, ctx.repo, item))


@router.add("GET", R + "/issues/{issue_number}/comments")
async def list_comments(ctx: Ctx) -> Reply:
    item = issue_or_404(ctx)
    comments = [ctx.world.comments[c] for c in item.comment_ids if c in ctx.world.comments]
    since = ctx.query.get("since")
    if since:
        when = datetime.fromisoformat(since.replace("Z", "+00:00"))
        comments = [c for c in comments if c.updated_at >= when]
    return ctx.page([shapes_issues.comment(ctx.world, ctx.repo, c) for c in comments])


@router.add("POST", R + "/issues/{issue_number}/comments")
async def create_comment(ctx: Ctx) -> Reply:
    item = issue_or_404(ctx)
    body = ctx.json().get("body")
    if not isinstance(body, str) or not body:
        raise ApiError(422, "Validation Failed", [
            {"resource": "IssueComment", "field": "body", "code": "missing_field"}])
    com = ctx.ops.add_comment(ctx.repo, item, ctx.actor, body)
    return Reply(201, shapes_issues.comment(ctx.world, ctx.repo, com))


@router.add("GET", R + "/issues/comments/{comment_id}")
async def get_comment(ctx: Ctx) -> Reply:
    return Reply(200, shapes_issues.comment(ctx.world, ctx.repo, comment_or_404(ctx)))


@router.add("PATCH", R + "/issues/comments/{comment_id}")
async def update_comment(ctx: Ctx) -> Reply:
    com = comment_or_404(ctx)
    body = ctx.json().get("body")
    if not isinstance(body, str):
        raise ApiError(422, "Validation Failed", [
            {"resource": "IssueComment", "field": "body", "code": "missing_field"}])
    ctx.ops.edit_comment(ctx.repo, com, body, ctx.actor)
    return Reply(200, shapes_issues.comment(ctx.world, ctx.repo, com))


@router.add("DELETE", R + "/issues/comments/{comment_id}")
async def delete_comment(ctx: Ctx) -> Reply:
    com = comment_or_404(ctx)
    del ctx.world.comments[com.id]
    item = ctx.repo.issues.get(com.issue_number)
    if item is not None and com.id in item.comment_ids:
        item.comment_ids.remove(com.id)
    return Reply(204, None)


@router.add("POST", R + "/issues/comments/{comment_id}/reactions")
async def create_reaction(ctx: Ctx) -> Reply:
    com = comment_or_404(ctx)
    content = ctx.json().get("content")
    if content not in REACTIONS:
        raise ApiError(422, "Validation Failed", [
            {"resource": "Reaction", "field": "content", "code": "invalid"}])
    for existing in com.reactions:
        if existing.user == ctx.actor and existing.content == content:
            return Reply(200, shapes_issues.reaction(ctx.world, existing))
    reaction = Reaction(ctx.world.next_id(), ctx.actor, str(content), ctx.world.now())
    com.reactions.append(reaction)
    return Reply(201, shapes_issues.reaction(ctx.world, reaction))


@router.add("GET", R + "/issues/comments/{comment_id}/reactions")
async def list_reactions(ctx: Ctx) -> Reply:
    com = comment_or_404(ctx)
    content = ctx.query.get("content")
    items = [r for r in com.reactions if content is None or r.content == content]
    return ctx.page([shapes_issues.reaction(ctx.world, r) for r in items])


@router.add("GET", R + "/issues/{issue_number}/labels")
async def list_issue_labels(ctx: Ctx) -> Reply:
    item = issue_or_404(ctx)
    return ctx.page([shapes_issues.label(ctx.world, ctx.repo, ctx.repo.labels[n])
                     for n in item.labels if n in ctx.repo.labels])


@router.add("POST", R + "/issues/{issue_number}/labels")
async def add_labels(ctx: Ctx) -> Reply:
    item = issue_or_404(ctx)
    body = ctx.body
    names = body.get("labels") if isinstance(body, dict) else body
    if not isinstance(names, list) or not names:
        raise ApiError(422, "Invalid request.\n\nNo subschema in \"anyOf\" matched.")
    ctx.ops.add_labels(ctx.repo, item, [n if isinstance(n, str) else str(n.get("name"))
                                        for n in names], ctx.actor)
    return Reply(200, [shapes_issues.label(ctx.world, ctx.repo, ctx.repo.labels[n])
                       for n in item.labels if n in ctx.repo.labels])


@router.add("DELETE", R + "/issues/{issue_number}/labels/{name}")
async def remove_label(ctx: Ctx) -> Reply:
    item = issue_or_404(ctx)
    ctx.ops.remove_label(ctx.repo, item, ctx.params["name"], ctx.actor)
    return Reply(200, [shapes_issues.label(ctx.world, ctx.repo, ctx.repo.labels[n])
                       for n in item.labels if n in ctx.repo.labels])


@router.add("GET", R + "/labels")
async def list_labels(ctx: Ctx) -> Reply:
    return ctx.page([shapes_issues.label(ctx.world, ctx.repo, lab)
                     for lab in sorted(ctx.repo.labels.values(), key=lambda x: x.name.lower())])


@router.add("POST", R + "/labels")
async def create_label(ctx: Ctx) -> Reply:
    body = ctx.json()
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ApiError(422, "Validation Failed", [
            {"resource": "Label", "field": "name", "code": "missing_field"}])
    if any(n.lower() == name.lower() for n in ctx.repo.labels):
        raise ApiError(422, "Validation Failed", [
            {"resource": "Label", "field": "name", "code": "already_exists"}])
    lab = Label(ctx.world.next_id(), name, str(body.get("color", "ededed")).lstrip("#"),
                str(body.get("description") or ""))
    ctx.repo.labels[name] = lab
    return Reply(201, shapes_issues.label(ctx.world, ctx.repo, lab))


@router.add("GET", R + "/labels/{name}")
async def get_label(ctx: Ctx) -> Reply:
    name = ctx.params["name"].lower()
    lab = next((x for n, x in ctx.repo.labels.items() if n.lower() == name), None)
    if lab is None:
        raise not_found()
    return Reply(200, shapes_issues.label(ctx.world, ctx.repo, lab))
