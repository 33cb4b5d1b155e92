"""Deployment reports in deployment repositories: commit statuses, check runs and deployment
statuses that may be the evidence (or take it away) for a gate downstream."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gidgethub import sansio

from bot.domain.deployed import (
    FINAL_STATES,
    Report,
    ReportKind,
    Trust,
    check_run_state,
    deployment_state,
    may_match,
)
from bot.domain.policy import Policy
from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import deployment_repo
from bot.handlers.routes import Declared
from bot.promotion.commands.command_run import CommandCapabilities
from bot.promotion.commands.rollback import watcher
from bot.promotion.evidence.deployed import parse_time
from bot.promotion.policies import PolicyIndex
from bot.promotion.triggers.downstream import RERUN_AT_ONCE, reevaluate_open_pulls
from bot.promotion.watching.watch import FAILED_STATES, watched

log = logging.getLogger(__name__)


def report_of(event: sansio.Event) -> Report | None:
    """The report a webhook carries, in the shape the evidence search reads it."""
    data: dict[str, Any] = event.data
    kind: ReportKind
    if event.event == "status":
        kind, name, state = "status", str(data.get("context") or ""), str(data.get("state"))
        reporter, app_id, sha = (data.get("sender") or {}).get("login", ""), None, data["sha"]
        at, order = data.get("updated_at"), data.get("id")
    elif event.event == "check_run":
        run = data["check_run"]
        app = run.get("app") or {}
        kind, name = "check_run", str(run.get("name") or "")
        state = check_run_state(run.get("status"), run.get("conclusion"))
        reporter, app_id, sha = f"{app.get('slug', '')}[bot]", app.get("id"), run["head_sha"]
        at, order = run.get("completed_at"), run.get("id")
    else:
        status, deployment = data["deployment_status"], data["deployment"]
        app = status.get("performed_via_github_app") or {}
        kind, name = "deployment", str(deployment.get("environment") or "")
        state = deployment_state(str(status.get("state") or ""))
        reporter = (status.get("creator") or {}).get("login", "")
        app_id, sha, at = app.get("id"), deployment["sha"], status.get("created_at")
        order = status.get("id")
    if state not in FINAL_STATES:
        return None
    return Report(kind=kind, name=name, state=state,
                  at=parse_time(at) if at else datetime.min.replace(tzinfo=UTC),
                  reporter=reporter, sha=sha, url="", app_id=app_id,
                  order=order if isinstance(order, int) else 0)


def concerns_a_gate(policy: Policy, report: Report, own_login: str, own_app_id: int | None
                    ) -> bool:
    """Whether some gated environment reads this report as deployed evidence."""
    for environment in policy.environments.values():
        if "deployed" not in environment.evidence or not any(
                may_match(report.kind, environment.deployed_context, upstream, report.name)
                for upstream in environment.after):
            continue
        if Trust(environment.deployed_by, own_login, own_app_id).refusal(report) is None:
            return True
    return False


@dataclass(frozen=True)
class DeploymentReports:
    policies: PolicyIndex
    commands: CommandCapabilities

    async def on_deployment_report(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        """A final report (success, failure, error) by a trusted reporter re-evaluates the
        gates: it may be the evidence one waits for, or a failure that takes evidence away."""
        report = report_of(event)
        if report is None:
            return
        repo = await deployment_repo(event, gh, self.policies)
        if repo is None:
            return
        marked = False
        if report.state in FAILED_STATES and watched(repo.policy):
            marked = await watcher(self.commands, gh, repo).on_report(report)
        # A digest marked failed fails the open gates of every environment after that one,
        # now: a merge before their next evaluation would ship what just failed.
        ctx = self.commands.ctx
        if not marked and not concerns_a_gate(repo.policy, report, ctx.bot_login, ctx.app_id):
            log.debug("a deployment report no gate reads", extra={
                "repository": repo.full_name, "report": report.describe()})
            return
        # A failure takes evidence away or marks the digest: every open gate is re-run. A
        # success can only let one pass sooner, which the resync does for the older ones.
        await reevaluate_open_pulls(self.commands.gates, gh, repo, newest=None if (
            report.state in FAILED_STATES) else RERUN_AT_ONCE)


DECLARED = (
    Declared("deployments.report", DeploymentReports.on_deployment_report,
             on=(("status", None), ("check_run", "completed"),
                 ("deployment_status", "created"))),
)
