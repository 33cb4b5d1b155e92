"""Delivery metrics of a scripted month, read back from GitHub by `report` and by `/metrics`
and the dashboard: three releases into staging a week apart, one reported failing and rolled
back, with figures computed by hand."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.cli.report import collect, render
from bot.promotion.dashboard.issue import find_dashboard, refresh_dashboard, refresh_delivery
from bot.runtime.settings import Settings
from tests.flows.gitops import ArgoCD
from tests.flows.test_watch import policy, started
from tests.harness import SECRET, START, World, close_world


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await started(policy())
    try:
        yield built
    finally:
        await close_world(built)


def settings_of(world: World) -> Settings:
    return Settings(app_id=str(world.emulator.app_id),
                    private_key=world.emulator.app_private_key_pem, webhook_secret=SECRET,
                    api_url=world.conveyor.ctx.clients.api_url)


async def release_at(world: World, version: str, *, to_merge: timedelta) -> dict[str, Any]:
    """A source commit now, its release `to_merge` later (staging merges it at once)."""
    await world.emulator.push_files("acme/web", {"VERSION": version}, message=version)
    world.clock.advance(seconds=to_merge.total_seconds())
    await world.release("web", version)
    return world.pull(f"Promote web {version} to staging")


async def argo(world: World, sha: str, state: str, after: timedelta) -> None:
    world.clock.advance(seconds=after.total_seconds())
    await ArgoCD(world, app_slug="argocd").status("web-staging", sha, state)


async def scripted_month(world: World) -> None:
    first = await release_at(world, "1.0.0", to_merge=timedelta(hours=2))
    await argo(world, first["merge_commit_sha"], "success", timedelta(minutes=30))
    world.clock.now = START + timedelta(days=7)
    second = await release_at(world, "1.1.0", to_merge=timedelta(hours=1))
    await argo(world, second["merge_commit_sha"], "failure", timedelta(minutes=10))
    rollback = world.pull("Roll back web in staging")
    assert rollback["merged"]
    await argo(world, rollback["merge_commit_sha"], "success", timedelta(minutes=20))
    world.clock.now = START + timedelta(days=14)
    third = await release_at(world, "1.2.0", to_merge=timedelta(hours=3))
    await argo(world, third["merge_commit_sha"], "success", timedelta(minutes=5))
    world.clock.now = START + timedelta(days=20)


async def test_the_report_of_a_scripted_month(world: World) -> None:
    await scripted_month(world)
    found, since, until = await collect(settings_of(world), world.repo, timedelta(days=30),
                                        now=world.clock)
    assert until - since == timedelta(days=30)
    web = {f.environment: f for f in found if f.service == "web"}
    staging = web["staging"]
    # 1.0.0, 1.1.0, the rollback, 1.2.0; the rollback is no change; 1.1.0 failed
    assert (staging.deployments, staging.changes, staging.failures) == (4, 3, 1)
    assert staging.per_day == 4 / 30
    assert staging.lead_time_merged == timedelta(hours=2)  # median of 2h, 1h, 3h
    # median of 2h30m (1.0.0) and 3h05m (1.2.0); 1.1.0 was never reported deployed
    assert staging.lead_time_deployed == timedelta(hours=2, minutes=47, seconds=30)
    assert staging.time_to_restore == timedelta(minutes=20)  # failure → rollback's success
    assert web["production"].deployments == 0
    assert [f.deployments for f in found if f.service == "api"] == [0, 0]

    data = json.loads(render(found, "json", world.repo, since, until))
    assert data["figures"][0] == {
        "service": "web", "environment": "staging", "deployments": 4,
        "deployments_per_day": 0.1333, "lead_time_merged_seconds": 7200.0,
        "lead_time_deployed_seconds": 10050.0, "change_failure_rate": 0.3333,
        "time_to_restore_seconds": 1200.0}
    table = render(found, "md", world.repo, since, until)
    assert "| web | staging | 4 | 0.9 | 2h | 2h47m30s | 33% | 20m |" in table
    csv_text = render(found, "csv", world.repo, since, until)
    assert csv_text.splitlines()[1] == "web,staging,4,0.1333,7200.0,10050.0,0.3333,1200.0"


async def scrape(world: World) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    url = world.webhook_url.replace("/api/github/webhooks", "/metrics")
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            if family.name.startswith(("conveyor_promotions_merged", "conveyor_lead_time",
                                       "conveyor_change_failure", "conveyor_time_to_restore"))
            for sample in family.samples}


async def test_metrics_and_the_dashboard_show_the_figures_of_report(world: World) -> None:
    await scripted_month(world)
    found, _, _ = await collect(settings_of(world), world.repo, timedelta(days=30),
                                now=world.clock)
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    assert await refresh_delivery(capabilities.dashboards) == 1
    assert await refresh_delivery(capabilities.dashboards) == 0  # read at most once an hour
    samples = await scrape(world)
    web = (("environment", "staging"), ("repository", world.repo), ("service", "web"))
    staging = next(f for f in found if (f.service, f.environment) == ("web", "staging"))
    assert samples["conveyor_promotions_merged", web] == staging.deployments == 4
    assert samples["conveyor_change_failure_rate", web] == staging.change_failure_rate == 1 / 3
    assert samples["conveyor_time_to_restore_seconds", web] == 1200.0
    merged = tuple(sorted((*web, ("until", "merged"))))
    deployed = tuple(sorted((*web, ("until", "deployed"))))
    assert samples["conveyor_lead_time_seconds_count", merged] == 3.0
    assert samples["conveyor_lead_time_seconds_sum", merged] == 6 * 3600.0  # 2h + 1h + 3h
    assert samples["conveyor_lead_time_seconds_bucket",
                   tuple(sorted((*merged, ("le", "7200.0"))))] == 2.0  # 1h and 2h
    assert samples["conveyor_lead_time_seconds_sum", deployed] == 9000.0 + 11100.0
    production = (("environment", "production"), ("repository", world.repo),
                  ("service", "web"))
    assert samples["conveyor_promotions_merged", production] == 0.0
    assert ("conveyor_change_failure_rate", production) not in samples  # no change: no rate
    assert {dict(labels)["service"] for _, labels in samples} == {"web", "api"}

    gh = await ctx.clients.installation(world.demo.installation_id)
    [repo] = await capabilities.policies.load(gh, world.demo.installation_id)
    await refresh_dashboard(capabilities.dashboards, gh, repo)
    issue = await find_dashboard(ctx, gh, world.repo)
    assert issue is not None
    body = str(issue["body"])
    assert "| web | staging | 4 | 2h | 2h47m30s | 33% | 20m |" in body
    # weeks from Nov 20: 1.0.0 (Nov 30, 2h), 1.1.0 (Dec 7, 1h), 1.2.0 (Dec 14, 3h)
    assert "    bar [0.0, 2.0, 1.0, 3.0, 0.0]" in body
    assert "```mermaid\nxychart-beta" in body


async def test_a_merge_shows_on_metrics_within_a_minute_and_the_count_is_a_gauge(
        world: World) -> None:
    capabilities = world.conveyor.capabilities
    # the hourly read: nothing merged yet
    assert await refresh_delivery(capabilities.dashboards) == 1
    web = (("environment", "staging"), ("repository", world.repo), ("service", "web"))
    assert (await scrape(world))["conveyor_promotions_merged", web] == 0.0
    await world.release("web", "1.0.0")
    assert world.pull("Promote web 1.0.0 to staging")["merged"]
    world.clock.advance(seconds=21)  # the read after a merge is debounced by 20 s
    world.conveyor.ctx.scheduler.fire_due()
    await world.settle()
    assert (await scrape(world))["conveyor_promotions_merged", web] == 1.0
    url = world.webhook_url.replace("/api/github/webhooks", "/metrics")
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    assert "# TYPE conveyor_promotions_merged gauge" in text
    assert "conveyor_promotions_merged_total" not in text
    assert 'conveyor_promotions_total{action="merged",environment="staging"} 1.0' in text
