"""Environments as a graph, over HTTP: a fan-in needs evidence from every upstream, a fan-out
opens one PR per downstream environment, and a failure in one region of a wave fails the gates
of every region after it on the report's own event and stops `promote: auto` there."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

import pytest

from bot.cli.report import collect
from bot.sandbox.demo import digest_of
from tests.flows.gitops import ArgoCD
from tests.flows.test_commands import reply_to, say
from tests.flows.test_delivery_report import settings_of
from tests.harness import World, close_world, make_world

SERVICES = """version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
    tags: "semver:>=1.0.0"
  api:
    image: ghcr.io/acme/api
    source: acme/api
    tags: "semver:>=1.0.0"
groups:
  storefront: [web, api]
environments:
"""

REPORTED = """    deployed_context: argocd/{service}-{env}
    deployed_by: ["argocd[bot]"]
"""

FAN_IN = SERVICES + """  - name: staging-eu
    path: deploy/staging-eu/{service}.yaml
    from: any
    auto_merge: true
  - name: staging-us
    path: deploy/staging-us/{service}.yaml
    from: any
    auto_merge: true
  - name: production
    path: deploy/production/{service}.yaml
    after: [staging-eu, staging-us]
    promote: auto
    evidence: [merged, deployed]
""" + REPORTED

FAN_OUT = SERVICES + """  - name: staging
    path: deploy/staging/{service}.yaml
    from: any
    auto_merge: true
  - name: prod-eu
    path: deploy/prod-eu/{service}.yaml
    after: staging
    promote: auto
    evidence: [merged]
  - name: prod-us
    path: deploy/prod-us/{service}.yaml
    after: staging
    promote: auto
    evidence: [merged]
    approvals: 1
"""

WAVE = SERVICES + """  - name: staging
    path: deploy/staging/{service}.yaml
    from: any
    auto_merge: true
  - name: prod-eu
    path: deploy/prod-eu/{service}.yaml
    after: staging
    promote: auto
    evidence: [merged]
    auto_merge: true
    on_failure: hold
""" + REPORTED + """  - name: prod-us
    path: deploy/prod-us/{service}.yaml
    after: prod-eu
    promote: auto
    evidence: [merged]
    on_failure: hold
""" + REPORTED + """  - name: prod-ap
    path: deploy/prod-ap/{service}.yaml
    after: prod-us
    promote: auto
    evidence: [merged]
"""


def manifest(service: str, version: str = "0.9.0") -> str:
    image = f"ghcr.io/acme/{service}"
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {service}
spec:
  selector:
    matchLabels:
      app: {service}
  template:
    metadata:
      labels:
        app: {service}
    spec:
      containers:
        - name: {service}
          image: {image}:{version}@{digest_of(f"{image}:{version}")}
"""


def files(policy: str, environments: Sequence[str]) -> dict[str, str]:
    found = {".github/conveyor.yml": policy, "README.md": "# deployments\n"}
    for env in environments:
        for service in ("web", "api"):
            found[f"deploy/{env}/{service}.yaml"] = manifest(service)
    return found


async def graph_world(policy: str, environments: Sequence[str]) -> World:
    world = await make_world(files=files(policy, environments))
    ArgoCD(world, app_slug="argocd").install()
    return world


@pytest.fixture
async def fan_in() -> AsyncIterator[World]:
    world = await graph_world(FAN_IN, ("staging-eu", "staging-us", "production"))
    try:
        yield world
    finally:
        await close_world(world)
    assert world.emulator.violations == [], world.emulator.violations


def titles(world: World) -> list[str]:
    return sorted(pr["title"] for pr in world.emulator.pulls(world.repo, state="all"))


async def on_an_issue(world: World, body: str) -> str:
    issue = await world.emulator.open_issue(world.repo, "Releases", author="alice")
    await world.settle()
    return await comment(world, int(issue["number"]), body)


async def comment(world: World, number: int, body: str) -> str:
    """Post a command and return Conveyor's reply to it."""
    return reply_to(world, number, await say(world, number, body))


async def test_a_fan_in_waits_for_the_last_upstream_then_passes_without_a_command(
        fan_in: World) -> None:
    world, argocd = fan_in, ArgoCD(fan_in, app_slug="argocd")
    await world.release("web", "1.1.0")
    eu, us = world.pull("web 1.1.0 to staging-eu"), world.pull("web 1.1.0 to staging-us")
    assert eu["merged"] and us["merged"]
    production = world.pull("Promote web 1.1.0 to production")  # one PR, though two merged
    gate = world.gate(production)
    assert gate["conclusion"] == "failure"
    summary = gate["output"]["summary"]
    assert "merged in staging-eu" in summary and "merged in staging-us" in summary
    assert "no deployed evidence from staging-eu" in summary
    assert "no deployed evidence from staging-us" in summary

    await argocd.status("web-staging-eu", eu["merge_commit_sha"])
    await world.settle()
    gate = world.gate(production)
    assert gate["conclusion"] == "failure"
    assert "no deployed evidence from staging-eu" not in gate["output"]["summary"]
    assert "no deployed evidence from staging-us" in gate["output"]["summary"]

    await argocd.status("web-staging-us", us["merge_commit_sha"])
    await world.settle()
    gate = world.gate(production)
    assert gate["conclusion"] == "success", gate["output"]
    assert "deployed in staging-us" in gate["output"]["summary"]
    body = world.pull("Promote web 1.1.0 to production")["body"]
    assert "every one of **staging-eu and staging-us**" in body

    status = await on_an_issue(world, "/status web")
    assert '  e0["<b>staging-eu</b><br/>1.1.0"]' in status
    assert '  e2["<b>production</b><br/>0.9.0"]' in status
    assert "  e0 --> e2\n  e1 --> e2" in status

    await world.emulator.merge_pull(world.repo, production["number"], user="bob")
    await world.settle()
    world.clock.advance(seconds=60)  # the report counts merges before its end
    found, _, _ = await collect(settings_of(world), world.repo, timedelta(days=30),
                                now=world.clock)
    lead = {f.environment: f for f in found if f.service == "web"}
    assert {env: lead[env].deployments for env in lead} == {
        "staging-eu": 1, "staging-us": 1, "production": 1}
    assert lead["production"].lead_time_merged is not None

    reply = await comment(world, production["number"], "/rollback web production")
    back = world.pull("Roll back web in production", state="open")
    assert f"#{back['number']}" in reply
    gate = world.gate(back)
    assert "history in production" in gate["output"]["summary"], gate["output"]


async def test_promote_auto_opens_a_fan_in_once_the_last_upstream_merges() -> None:
    policy = FAN_IN.replace("    from: any\n    auto_merge: true\n  - name: production",
                            "    from: any\n  - name: production")
    world = await graph_world(policy, ("staging-eu", "staging-us", "production"))
    try:
        await world.release("web", "1.1.0")
        assert world.pull("web 1.1.0 to staging-eu")["merged"]
        us = world.pull("web 1.1.0 to staging-us")
        assert not us["merged"]
        assert not [t for t in titles(world) if "production" in t]

        reply = await on_an_issue(world, "/promote production web")
        assert "staging-eu runs 1.1.0" in reply and "staging-us runs 0.9.0" in reply, reply
        assert not [t for t in titles(world) if "production" in t]

        await world.emulator.merge_pull(world.repo, us["number"], user="bob")
        await world.settle()
        production = world.pull("Promote web 1.1.0 to production")
        assert f"Follows #{us['number']}" in production["body"]
        assert world.gate(production)["conclusion"] == "failure"  # deployed evidence missing
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_train_through_a_fan_in_takes_what_every_upstream_runs(fan_in: World) -> None:
    world = fan_in
    await world.release("web", "1.1.0")
    await world.release("api", "1.2.0")
    for pr in world.emulator.pulls(world.repo, state="open"):  # the single-service ones
        await world.emulator.close_pull(world.repo, pr["number"], user="bob")
    await world.settle()
    reply = await on_an_issue(world, "/promote production storefront")
    train = world.pull("Promote storefront to production (2 services)")
    assert f"#{train['number']}" in reply
    assert "holds evidence in **staging-eu and staging-us**" in train["body"]
    text = world.emulator.file(world.repo, "deploy/production/web.yaml", train["head"]["ref"])
    assert world.published["web:1.1.0"] in text
    gate = world.gate(train)
    assert "no deployed evidence from staging-us" in gate["output"]["summary"]


async def test_fan_out_opens_one_pull_request_per_environment_with_its_own_gate() -> None:
    world = await graph_world(FAN_OUT, ("staging", "prod-eu", "prod-us"))
    try:
        await world.release("web", "1.1.0")
        eu, us = world.pull("web 1.1.0 to prod-eu"), world.pull("web 1.1.0 to prod-us")
        assert eu["number"] != us["number"]
        assert world.gate(eu)["conclusion"] == "success"
        assert world.gate(us)["conclusion"] == "action_required"  # prod-us asks for a review
        assert "merged in staging" in world.gate(us)["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


@pytest.fixture
async def wave() -> AsyncIterator[World]:
    world = await graph_world(WAVE, ("staging", "prod-eu", "prod-us", "prod-ap"))
    try:
        yield world
    finally:
        await close_world(world)
    assert world.emulator.violations == [], world.emulator.violations


async def test_a_failure_in_the_middle_region_fails_the_gates_after_it_at_once(
        wave: World) -> None:
    world, argocd = wave, ArgoCD(wave, app_slug="argocd")
    await world.release("web", "1.1.0")
    eu = world.pull("web 1.1.0 to prod-eu")
    us = world.pull("web 1.1.0 to prod-us")
    assert eu["merged"] and not us["merged"]
    await world.emulator.merge_pull(world.repo, us["number"], user="bob")
    await world.settle()
    ap = world.pull("web 1.1.0 to prod-ap")
    assert world.gate(ap)["conclusion"] == "success"

    merged_us = world.pull("web 1.1.0 to prod-us")
    await argocd.status("web-prod-us", merged_us["merge_commit_sha"], "failure")
    await world.settle()
    gate = world.gate(ap)
    assert gate["conclusion"] == "failure", gate["output"]
    assert "reported failing in prod-us" in gate["output"]["summary"]

    # a failure two regions up counts as well, on its own event
    await argocd.status("web-prod-eu", eu["merge_commit_sha"], "failure")
    await world.settle()
    assert "reported failing in prod-eu" in world.gate(ap)["output"]["summary"]


async def test_a_failure_mark_stops_promote_auto_until_unhold(wave: World) -> None:
    world, argocd = wave, ArgoCD(wave, app_slug="argocd")
    await world.release("web", "1.1.0")
    eu = world.pull("web 1.1.0 to prod-eu")
    us = world.pull("web 1.1.0 to prod-us")
    await argocd.status("web-prod-eu", eu["merge_commit_sha"], "failure")
    await world.settle()
    assert "reported failing in prod-eu" in world.gate(us)["output"]["summary"]

    # merged past the failing gate (no branch protection here): the wave stays halted
    await world.emulator.merge_pull(world.repo, us["number"], user="bob")
    await world.settle()
    assert not [t for t in titles(world) if "prod-ap" in t]

    reply = await comment(world, us["number"], "/promote prod-ap")
    ap = world.pull("web 1.1.0 to prod-ap")
    assert f"#{ap['number']}" in reply
    assert "reported failing in prod-eu" in world.gate(ap)["output"]["summary"]
    reply = await comment(world, ap["number"], "/unhold")
    assert "failure mark is cleared" in reply, reply
    gate = world.gate(world.pull("web 1.1.0 to prod-ap"))
    assert gate["conclusion"] == "success", gate["output"]


async def test_a_train_merged_past_a_failure_mark_opens_nothing_further(wave: World) -> None:
    world, argocd = wave, ArgoCD(wave, app_slug="argocd")
    await world.release("web", "1.1.0")
    await world.release("api", "1.1.0")
    for pr in world.emulator.pulls(world.repo, state="open"):  # the single-service prod-us PRs
        await world.emulator.close_pull(world.repo, pr["number"], user="bob")
    await world.settle()
    eu = world.pull("web 1.1.0 to prod-eu")
    await argocd.status("web-prod-eu", eu["merge_commit_sha"], "failure")
    await world.settle()
    await on_an_issue(world, "/promote prod-us storefront")
    train = world.pull("Promote storefront to prod-us (2 services)")
    assert "reported failing in prod-eu" in world.gate(train)["output"]["summary"]
    await world.emulator.merge_pull(world.repo, train["number"], user="bob")
    await world.settle()
    assert not [t for t in titles(world) if "prod-ap" in t]
