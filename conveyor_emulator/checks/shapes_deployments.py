"""GitHub's JSON for deployments and deployment statuses."""

from __future__ import annotations

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.apps.shapes_apps import app
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, Deployment, DeploymentStatus, Repo, iso
from conveyor_emulator.store.world import World


def deployment(world: World, repo: Repo, dep: Deployment) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "url": f"{api}/deployments/{dep.id}",
        "id": dep.id,
        "node_id": node_id("Deployment", dep.id),
        "sha": dep.sha,
        "ref": dep.ref,
        "task": dep.task,
        "payload": dep.payload,
        "original_environment": dep.original_environment,
        "environment": dep.environment,
        "description": dep.description,
        "creator": user(world, dep.creator),
        "created_at": iso(dep.created_at),
        "updated_at": iso(dep.updated_at),
        "statuses_url": f"{api}/deployments/{dep.id}/statuses",
        "repository_url": api,
        "transient_environment": dep.transient_environment,
        "production_environment": dep.production_environment,
        "performed_via_github_app": performed_via(world, dep.creator),
    }


def performed_via(world: World, login: str) -> JSON | None:
    """The app behind a bot user's deployment or deployment status (null for people)."""
    app_id = world.app_of(login)
    return None if app_id is None else app(world, app_id)


def deployment_status(world: World, repo: Repo, dep: Deployment, st: DeploymentStatus) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    return {
        "url": f"{api}/deployments/{dep.id}/statuses/{st.id}",
        "id": st.id,
        "node_id": node_id("DeploymentStatus", st.id),
        "state": st.state,
        "creator": user(world, st.creator),
        "description": st.description,
        "environment": st.environment,
        "target_url": st.log_url,
        "created_at": iso(st.created_at),
        "updated_at": iso(st.created_at),
        "deployment_url": f"{api}/deployments/{dep.id}",
        "repository_url": api,
        "environment_url": st.environment_url,
        "log_url": st.log_url,
        "performed_via_github_app": performed_via(world, st.creator),
    }
