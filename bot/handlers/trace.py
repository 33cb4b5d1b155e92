"""Traceability: merged promotions reported to the source repository, and the dashboard issue.

Separate from `pulls.py` (which opens downstream promotions and re-runs gates on the same
merge): each handler stands alone, so one failing never stops the other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from gidgethub import sansio

from bot.domain.promotions.marker import PromotionMarker, parse_marker, service_markers
from bot.github.client import ConveyorGitHubAPI
from bot.handlers.events import deployment_repo, indexed_repo, is_default_branch_push
from bot.handlers.routes import Declared
from bot.promotion.authorship.trust import trusted_promotion
from bot.promotion.dashboard.issue import (
    DashboardCapabilities,
    refresh_dashboard,
    refresh_repo_delivery,
    schedule_dashboard,
    schedule_delivery,
)
from bot.promotion.history.trace import TracedPromotion, report_promotion, source_commit
from bot.promotion.policies import DeploymentRepo
from bot.runtime.scheduler import internal_event
from bot.runtime.timer_jobs import DashboardDue, DeliveryDue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tracing:
    dashboards: DashboardCapabilities

    async def on_promotion_merged(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        ctx = self.dashboards.ctx
        repo = await indexed_repo(event, gh, self.dashboards.policies)
        if repo is None:
            return
        schedule_dashboard(ctx, event.data["installation"]["id"], repo.full_name)
        if not isinstance(repo, DeploymentRepo):
            return  # a broken policy names no service to trace
        pr = event.data["pull_request"]
        if not pr.get("merged") or parse_marker(pr.get("body")) is None:
            return
        # What is traced is what Conveyor's own commit says, never an edited marker.
        found = await trusted_promotion(gh, repo.full_name, pr, ctx.bot_login)
        if found is None:
            log.warning("a promotion marker in a PR Conveyor did not open, not traced",
                        extra={"pull": pr["number"]})
            return
        # The delivery figures read the merged promotions themselves: the marker only says
        # when.
        schedule_delivery(ctx, event.data["installation"]["id"], repo.full_name)
        # A release train is traced as the promotion of each service it moved.
        for promoted in service_markers(found[0]):
            await self._trace(gh, repo, pr, promoted)

    async def _trace(self, gh: ConveyorGitHubAPI, repo: DeploymentRepo, pr: dict[str, Any],
                     marker: PromotionMarker) -> None:
        ctx = self.dashboards.ctx
        service = repo.policy.services.get(marker.service)
        if service is None or marker.environment not in repo.policy.environments:
            log.info("promotion of a service or environment the policy no longer has, not "
                     "traced", extra={"pull": pr["number"], "service": marker.service})
            return
        if marker.source_repo and marker.source_repo.lower() != service.source.lower():
            log.warning("the marker's source repository is not the policy's, not traced",
                        extra={"pull": pr["number"], "marker": marker.source_repo,
                               "source": service.source})
            return
        sha = await source_commit(gh, marker, service.source)
        if sha is None:
            log.info("the promotion names no source commit, nothing to report",
                     extra={"pull": pr["number"]})
            return
        await report_promotion(ctx, gh, TracedPromotion(
            deploy_repo=repo.full_name, number=int(pr["number"]), url=str(pr["html_url"]),
            merged_at=str(pr.get("merged_at") or ctx.clock().isoformat()), marker=marker,
            source_repo=service.source, source_sha=sha,
        ))

    async def on_promotion_opened(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        ref = str(event.data["pull_request"]["head"].get("ref") or "")
        if not ref.startswith("conveyor/"):
            return
        repo = await indexed_repo(event, gh, self.dashboards.policies)
        if repo is not None:
            schedule_dashboard(self.dashboards.ctx, event.data["installation"]["id"],
                               repo.full_name)

    async def on_default_branch_push(self, event: sansio.Event, gh: ConveyorGitHubAPI
                                     ) -> None:
        """A direct push may change what an environment runs, too."""
        if not is_default_branch_push(event):
            return
        repo = await indexed_repo(event, gh, self.dashboards.policies)
        if repo is not None:
            schedule_dashboard(self.dashboards.ctx, event.data["installation"]["id"],
                               repo.full_name)

    async def on_delivery_due(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        repo = await deployment_repo(event, gh, self.dashboards.policies)
        if repo is not None:
            await refresh_repo_delivery(self.dashboards, gh, repo)

    async def on_dashboard_due(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        repo = await deployment_repo(event, gh, self.dashboards.policies)
        if repo is not None:
            await refresh_dashboard(self.dashboards, gh, repo)


DECLARED = (
    Declared("trace.dashboard_due", Tracing.on_dashboard_due,
             on=((internal_event(DashboardDue), None),)),
    Declared("trace.push", Tracing.on_default_branch_push, on=(("push", None),)),
    Declared("trace.delivery_due", Tracing.on_delivery_due,
             on=((internal_event(DeliveryDue), None),)),
    Declared("trace.merged", Tracing.on_promotion_merged, on=(("pull_request", "closed"),)),
    Declared("trace.opened", Tracing.on_promotion_opened,
             on=(("pull_request", "opened"), ("pull_request", "reopened"))),
)
