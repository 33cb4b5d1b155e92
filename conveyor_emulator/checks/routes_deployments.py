"""Deployments and deployment statuses."""

from __future__ import annotations

from conveyor_emulator.checks import required_checks, shapes_deployments
from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.state import Deployment, Repo

router = Router()
R = "/repos/{owner}/{repo}/deployments"
STATES = {"error", "failure", "inactive", "in_progress", "queued", "pending", "success"}


def deployment_or_404(ctx: Ctx) -> Deployment:
    dep_id = ctx.int_param("deployment_id")
    dep = next((d for d in ctx.repo.deployments if d.id == dep_id), None)
    if dep is None:
        raise not_found()
    return dep


@router.add("POST", R)
async def create_deployment(ctx: Ctx) -> Reply:
    repo = ctx.repo
    body = ctx.json()
    ref = body.get("ref")
    if not isinstance(ref, str):
        raise ApiError(422, "Invalid request.\n\n\"ref\" wasn't supplied.")
    sha = repo.resolve(ref)
    if sha is None:
        raise ApiError(422, f"No ref found for: {ref}")
    required = body.get("required_contexts")
    contexts = required if isinstance(required, list) else None
    if contexts is None:
        contexts = [s.context for s in repo.statuses if s.sha == sha] + \
            [r.name for r in repo.check_runs if r.head_sha == sha]
    failing = [c for c in contexts if not _context_ok(ctx, sha, str(c))]
    if failing:
        raise ApiError(409, "Conflict: Commit status checks failed for " + ref + ".", [{
            "contexts": [{"context": c, "state": "failure"} for c in failing],
            "resource": "Deployment", "field": "required_contexts", "code": "invalid"}])
    conflict = auto_merge_conflict(repo, ref, sha) if body.get("auto_merge", True) else None
    if conflict is not None:
        raise ApiError(409, conflict)
    env = str(body.get("environment") or "production")
    dep = ctx.ops.create_deployment(
        repo, ref=ref, sha=sha, environment=env, payload=body.get("payload", {}),
        description=body.get("description"), actor=ctx.actor,
        task=str(body.get("task") or "deploy"),
        transient=bool(body.get("transient_environment", False)),
        production=bool(body.get("production_environment", env == "production")))
    return Reply(201, shapes_deployments.deployment(ctx.world, repo, dep))


def auto_merge_conflict(repo: Repo, ref: str, sha: str) -> str | None:
    """``auto_merge`` (default true) "attempts to automatically merge the default branch into
    the requested ref, if it's behind the default branch" (GitHub's description of "Create a
    deployment"). A commit sha cannot take a merge, so a sha behind the default branch is
    refused; Argo CD's GitHub notification service, which deploys the synced revision by sha,
    documents the same: "setting this option to false is required if you would like to deploy
    older refs in your default branch"."""
    if ref == repo.default_branch:
        return None
    default_sha = repo.branch_sha(repo.default_branch)
    if default_sha is None or repo.store.is_ancestor(default_sha, sha):
        return None
    branches = [r[len("refs/heads/"):] for r in repo.refs if r.startswith("refs/heads/")]
    if ref in branches or repo.store.commit(ref) is not None:
        return f"Conflict merging {repo.default_branch} into {ref}."
    return None


def _context_ok(ctx: Ctx, sha: str, context: str) -> bool:
    st = required_checks.latest_statuses(ctx.repo, sha).get(context)
    run = required_checks.latest_runs(ctx.repo, sha).get(context)
    return (st is not None and st.state == "success") or (
        run is not None and run.conclusion in ("success", "neutral", "skipped"))


@router.add("GET", R)
async def list_deployments(ctx: Ctx) -> Reply:
    items = list(reversed(ctx.repo.deployments))
    for key in ("sha", "ref", "environment", "task"):
        value = ctx.query.get(key)
        if value:
            items = [d for d in items if getattr(d, key) == value]
    return ctx.page([shapes_deployments.deployment(ctx.world, ctx.repo, d) for d in items])


@router.add("GET", R + "/{deployment_id}")
async def get_deployment(ctx: Ctx) -> Reply:
    return Reply(200, shapes_deployments.deployment(ctx.world, ctx.repo, deployment_or_404(ctx)))


@router.add("POST", R + "/{deployment_id}/statuses")
async def create_status(ctx: Ctx) -> Reply:
    dep = deployment_or_404(ctx)
    body = ctx.json()
    state = body.get("state")
    if state not in STATES:
        raise ApiError(422, "Validation Failed", [
            {"resource": "DeploymentStatus", "field": "state", "code": "invalid"}])
    st = ctx.ops.add_deployment_status(
        ctx.repo, dep, state=str(state), actor=ctx.actor,
        description=str(body.get("description") or ""),
        log_url=str(body.get("log_url") or body.get("target_url") or ""),
        environment_url=str(body.get("environment_url") or ""),
        environment=body.get("environment"))
    return Reply(201, shapes_deployments.deployment_status(ctx.world, ctx.repo, dep, st))


@router.add("GET", R + "/{deployment_id}/statuses")
async def list_statuses(ctx: Ctx) -> Reply:
    dep = deployment_or_404(ctx)
    return ctx.page([shapes_deployments.deployment_status(ctx.world, ctx.repo, dep, s)
                     for s in reversed(dep.statuses)])
