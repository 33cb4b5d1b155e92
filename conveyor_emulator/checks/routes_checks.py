"""Check runs and commit statuses."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from conveyor_emulator.checks import required_checks, shapes_checks
from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.repos import shapes_repos
from conveyor_emulator.repos.routes_repos import resolve_or_404
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.state import JSON, CheckRun

router = Router()
R = "/repos/{owner}/{repo}"
STATUSES = {"queued", "in_progress", "completed", "waiting", "requested", "pending"}
CONCLUSIONS = {"action_required", "cancelled", "failure", "neutral", "success", "skipped",
               "stale", "timed_out"}
MAX_ANNOTATIONS = 50
# "there is a limit of 1000 statuses per sha and context within a repository" (GitHub's
# description of "Create a commit status"); Argo CD's notifications name the 422 it gets
MAX_STATUSES_PER_CONTEXT = 1000


def _time(value: Any, default: datetime) -> datetime:
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return default


def _apply(ctx: Ctx, run: CheckRun, body: JSON) -> None:
    now = ctx.world.now()
    for key in ("name", "details_url", "external_id"):
        if isinstance(body.get(key), str):
            setattr(run, key, body[key])
    if "started_at" in body:
        run.started_at = _time(body["started_at"], run.started_at)
    output = body.get("output")
    if isinstance(output, dict):
        if "title" not in output or "summary" not in output:
            raise ApiError(422, "Invalid request.\n\n\"title\", \"summary\" weren't supplied.")
        annotations = output.get("annotations") or []
        if len(annotations) > MAX_ANNOTATIONS:
            raise ApiError(422, "Invalid request.\n\nOnly 50 annotations are allowed per "
                                "request.")
        run.output = {k: output.get(k) for k in ("title", "summary", "text")}
        run.annotations.extend(a for a in annotations if isinstance(a, dict))
    if isinstance(body.get("actions"), list):
        run.actions = [a for a in body["actions"] if isinstance(a, dict)]
    status = body.get("status")
    conclusion = body.get("conclusion")
    if status is not None and status not in STATUSES:
        raise ApiError(422, "Validation Failed", [
            {"resource": "CheckRun", "field": "status", "code": "invalid"}])
    if conclusion is not None and conclusion not in CONCLUSIONS:
        raise ApiError(422, "Validation Failed", [
            {"resource": "CheckRun", "field": "conclusion", "code": "invalid"}])
    if conclusion is not None:
        run.status = "completed"
        run.conclusion = conclusion
        run.completed_at = _time(body.get("completed_at"), now)
    elif status is not None:
        if status == "completed":
            raise ApiError(422, "Invalid request.\n\nNo subschema in \"anyOf\" matched.")
        run.status = status
        run.conclusion = None
        run.completed_at = None


def run_or_404(ctx: Ctx) -> CheckRun:
    run_id = ctx.int_param("check_run_id")
    run = next((r for r in ctx.repo.check_runs if r.id == run_id), None)
    if run is None:
        raise not_found()
    return run


@router.add("POST", R + "/check-runs")
async def create_check_run(ctx: Ctx) -> Reply:
    repo = ctx.repo
    body = ctx.json()
    name, head_sha = body.get("name"), body.get("head_sha")
    if not isinstance(name, str) or not isinstance(head_sha, str):
        raise ApiError(422, "Invalid request.\n\n\"name\", \"head_sha\" weren't supplied.")
    if repo.store.commit(head_sha) is None:
        raise ApiError(422, "Validation Failed", [
            {"resource": "CheckRun", "field": "head_sha", "code": "invalid"}])
    now = ctx.world.now()
    suite = ctx.world.suite_for(repo, head_sha, ctx.world.app_id)
    run = CheckRun(ctx.world.next_id(), repo.full_name, name, head_sha, suite.id,
                   ctx.world.app_id, "queued", None, now, None, {}, [], None, None, [])
    _apply(ctx, run, body)
    repo.check_runs.append(run)
    ctx.ops.check_run_event(repo, run, "created", ctx.actor)
    if run.status == "completed":
        ctx.ops.check_run_event(repo, run, "completed", ctx.actor)
    return Reply(201, shapes_checks.check_run(ctx.world, repo, run))


@router.add("PATCH", R + "/check-runs/{check_run_id}")
async def update_check_run(ctx: Ctx) -> Reply:
    run = run_or_404(ctx)
    was_completed = run.status == "completed"
    _apply(ctx, run, ctx.json())
    if run.status == "completed" and not was_completed:
        ctx.ops.check_run_event(ctx.repo, run, "completed", ctx.actor)
    return Reply(200, shapes_checks.check_run(ctx.world, ctx.repo, run))


@router.add("GET", R + "/check-runs/{check_run_id}")
async def get_check_run(ctx: Ctx) -> Reply:
    return Reply(200, shapes_checks.check_run(ctx.world, ctx.repo, run_or_404(ctx)))


@router.add("GET", R + "/check-runs/{check_run_id}/annotations")
async def list_annotations(ctx: Ctx) -> Reply:
    run = run_or_404(ctx)
    api = f"{ctx.world.api_url}/repos/{ctx.repo.full_name}"
    items = [{
        "path": a.get("path", ""),
        "start_line": a.get("start_line", 1),
        "end_line": a.get("end_line", a.get("start_line", 1)),
        "start_column": a.get("start_column"),
        "end_column": a.get("end_column"),
        "annotation_level": a.get("annotation_level"),
        "title": a.get("title"),
        "message": a.get("message"),
        "raw_details": a.get("raw_details"),
        "blob_href": f"{api}/blob/{run.head_sha}/{a.get('path', '')}",
    } for a in run.annotations]
    return ctx.page(items)


@router.add("GET", R + "/commits/{ref}/check-runs")
async def list_check_runs(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = resolve_or_404(repo, ctx.params["ref"])
    runs = [r for r in repo.check_runs if r.head_sha == sha]
    name = ctx.query.get("check_name")
    if name:
        runs = [r for r in runs if r.name == name]
    status = ctx.query.get("status")
    if status:
        runs = [r for r in runs if r.status == status]
    if ctx.query.get("filter", "latest") == "latest":
        latest: dict[str, CheckRun] = {}
        for run in runs:
            latest[run.name] = run
        runs = list(latest.values())
    runs.sort(key=lambda r: r.id, reverse=True)
    return ctx.page([shapes_checks.check_run(ctx.world, repo, r) for r in runs], wrap="check_runs")


@router.add("POST", R + "/statuses/{sha}")
async def create_status(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = ctx.params["sha"]
    if repo.store.commit(sha) is None:
        raise ApiError(422, "No commit found for SHA: " + sha)
    body = ctx.json()
    state = body.get("state")
    if state not in ("error", "failure", "pending", "success"):
        raise ApiError(422, "Validation Failed", [
            {"resource": "Status", "field": "state", "code": "custom"}])
    context = str(body.get("context") or "default")
    if sum(1 for s in repo.statuses if s.sha == sha and s.context == context) \
            >= MAX_STATUSES_PER_CONTEXT:
        raise ApiError(422, "Validation Failed", [{
            "resource": "Status", "code": "custom",
            "message": "This SHA and context has reached the maximum number of statuses."}])
    st = ctx.ops.add_status(repo, sha, str(state), context,
                            body.get("description"), body.get("target_url"), ctx.actor)
    return Reply(201, shapes_checks.status(ctx.world, st))


@router.add("GET", R + "/commits/{ref}/statuses")
async def list_statuses(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = resolve_or_404(repo, ctx.params["ref"])
    items = [s for s in reversed(repo.statuses) if s.sha == sha]
    return ctx.page([shapes_checks.status(ctx.world, s) for s in items])


@router.add("GET", R + "/commits/{ref}/status")
async def combined_status(ctx: Ctx) -> Reply:
    repo = ctx.repo
    sha = resolve_or_404(repo, ctx.params["ref"])
    latest = list(required_checks.latest_statuses(repo, sha).values())
    states = {s.state for s in latest}
    if not latest:
        state = "pending"
    elif states & {"failure", "error"}:
        state = "failure"
    elif "pending" in states:
        state = "pending"
    else:
        state = "success"
    api = f"{ctx.world.api_url}/repos/{repo.full_name}"
    reply = ctx.page([shapes_checks.status(ctx.world, s) for s in latest], wrap="statuses", extra={
        "state": state, "sha": sha,
        "repository": shapes_repos.minimal_repository(ctx.world, repo),
        "commit_url": f"{api}/commits/{sha}", "url": f"{api}/commits/{sha}/status"})
    return reply
