"""GitHub's JSON for check runs and suites, commit statuses and workflow runs."""

from __future__ import annotations

import zlib

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.apps.shapes_apps import app
from conveyor_emulator.issues.shapes_issues import pull_ref
from conveyor_emulator.repos.shapes_repos import minimal_repository
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, CheckRun, Repo, Status, WorkflowRun, iso
from conveyor_emulator.store.world import World


def check_run(world: World, repo: Repo, run: CheckRun) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    suite = next(s for s in repo.check_suites if s.id == run.suite_id)
    pulls = [
        pull_ref(world, repo, i) for i in repo.issues.values()
        if i.pull and i.state == "open" and i.pull.head_sha == run.head_sha
    ]
    output = dict(run.output)
    return {
        "id": run.id,
        "node_id": node_id("CheckRun", run.id),
        "head_sha": run.head_sha,
        "external_id": run.external_id or "",
        "url": f"{api}/check-runs/{run.id}",
        "html_url": f"{world.web_url}/{repo.full_name}/runs/{run.id}",
        "details_url": run.details_url or f"{world.web_url}/{repo.full_name}/runs/{run.id}",
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at),
        "output": {
            "title": output.get("title"),
            "summary": output.get("summary"),
            "text": output.get("text"),
            "annotations_count": len(run.annotations),
            "annotations_url": f"{api}/check-runs/{run.id}/annotations",
        },
        "name": run.name,
        "check_suite": {"id": suite.id},
        "app": app(world, run.app_id),
        "pull_requests": pulls,
    }


def _head_commit(repo: Repo, sha: str) -> JSON | None:
    """The `head_commit` of a check suite or a workflow run (None for a commit not stored)."""
    data = repo.store.commit(sha)
    if data is None:
        return None
    return {
        "id": sha, "tree_id": data.tree, "message": data.message,
        "timestamp": iso(data.committer.date),
        "author": {"name": data.author.name, "email": data.author.email},
        "committer": {"name": data.committer.name, "email": data.committer.email},
    }


def check_suite(world: World, repo: Repo, suite_id: int) -> JSON:
    suite = next(s for s in repo.check_suites if s.id == suite_id)
    runs = [r for r in repo.check_runs if r.suite_id == suite_id]
    status = "completed" if runs and all(r.status == "completed" for r in runs) else "queued"
    if runs and status != "completed":
        status = "in_progress"
    conclusions = [r.conclusion for r in runs if r.conclusion]
    conclusion = None
    if status == "completed":
        conclusion = next((c for c in ("failure", "action_required", "cancelled", "timed_out")
                           if c in conclusions), "success")
    api = f"{world.api_url}/repos/{repo.full_name}"
    commit_data = repo.store.commit(suite.head_sha)
    head_commit = _head_commit(repo, suite.head_sha)
    before = commit_data.parents[0] if commit_data and commit_data.parents else None
    return {
        "id": suite.id,
        "node_id": node_id("CheckSuite", suite.id),
        "head_branch": suite.head_branch,
        "head_sha": suite.head_sha,
        "status": status,
        "conclusion": conclusion,
        "url": f"{api}/check-suites/{suite.id}",
        "before": before,
        "after": suite.head_sha,
        "pull_requests": [
            pull_ref(world, repo, i) for i in repo.issues.values()
            if i.pull and i.state == "open" and i.pull.head_sha == suite.head_sha
        ],
        "app": app(world, suite.app_id),
        "created_at": iso(suite.created_at),
        "updated_at": iso(suite.updated_at),
        "latest_check_runs_count": len(runs),
        "check_runs_url": f"{api}/check-suites/{suite.id}/check-runs",
        "head_commit": head_commit,
        "rerequestable": True,
        "runs_rerequestable": True,
    }


def status(world: World, item: Status) -> JSON:
    return {
        "url": f"{world.api_url}/statuses/{item.sha}",
        "avatar_url": f"{world.web_url}/avatars/{world.account(item.creator).id}",
        "id": item.id,
        "node_id": node_id("StatusContext", item.id),
        "state": item.state,
        "description": item.description,
        "target_url": item.target_url,
        "context": item.context,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
        "creator": user(world, item.creator),
    }


def workflow_run(world: World, repo: Repo, run: WorkflowRun) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    url = f"{api}/actions/runs/{run.id}"
    head_commit = _head_commit(repo, run.head_sha)
    workflow_id = zlib.crc32(f"{repo.full_name}:{run.path}".encode()) % 10_000_000
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WorkflowRun", run.id),
        "check_suite_id": run.id + 1,
        "check_suite_node_id": node_id("CheckSuite", run.id + 1),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.path,
        "run_number": run.run_number,
        "run_attempt": 1,
        "display_title": run.name,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": workflow_id,
        "url": url,
        "html_url": f"{world.web_url}/{repo.full_name}/actions/runs/{run.id}",
        "pull_requests": [],
        "created_at": iso(run.created_at),
        "updated_at": iso(run.created_at),
        "run_started_at": iso(run.created_at),
        "actor": user(world, run.actor),
        "triggering_actor": user(world, run.actor),
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api}/check-suites/{run.id + 1}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "workflow_url": f"{api}/actions/workflows/{workflow_id}",
        "head_commit": head_commit,
        "repository": minimal_repository(world, repo),
        "head_repository": minimal_repository(world, repo),
    }
