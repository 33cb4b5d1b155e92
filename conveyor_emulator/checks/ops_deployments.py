"""Deployments and deployment statuses, with their webhooks."""

from __future__ import annotations

from typing import Any

from conveyor_emulator.checks import shapes_deployments
from conveyor_emulator.events.ops_core import OpsCore
from conveyor_emulator.store.state import Deployment, DeploymentStatus, Repo


class DeploymentOps(OpsCore):
    def create_deployment(self, repo: Repo, *, ref: str, sha: str, environment: str,
                          payload: Any, description: str | None, actor: str, task: str,
                          transient: bool, production: bool) -> Deployment:
        now = self.world.now()
        dep = Deployment(self.world.next_id(), sha, ref, task, environment, environment,
                         payload, description, actor, now, now, transient, production)
        repo.deployments.append(dep)
        self.emit("deployment", repo, actor, {
            "action": "created",
            "deployment": shapes_deployments.deployment(self.world, repo, dep),
            "workflow": None, "workflow_run": None})
        return dep

    def add_deployment_status(self, repo: Repo, dep: Deployment, *, state: str, actor: str,
                              description: str, log_url: str, environment_url: str,
                              environment: str | None) -> DeploymentStatus:
        now = self.world.now()
        if environment:
            dep.environment = environment
        st = DeploymentStatus(self.world.next_id(), state, actor, description, dep.environment,
                              log_url, environment_url, now)
        dep.statuses.append(st)
        dep.updated_at = now
        self.emit("deployment_status", repo, actor, {
            "action": "created",
            "deployment_status": shapes_deployments.deployment_status(self.world, repo, dep, st),
            "deployment": shapes_deployments.deployment(self.world, repo, dep)})
        return st
