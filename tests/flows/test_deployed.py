"""`deployed` evidence over HTTP, from Argo CD and Flux as their notifiers report it: one label
per Application, Flux contexts ending in a provider id, reports long after the merge, forged
reports, Conveyor's own deployments, and a failure after a success."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY, digest_of
from bot.text import unescape_markdown
from tests.flows.gitops import ArgoCD, Flux
from tests.harness import World, close_world, hand_pr, make_world, pinned_kustomization

GATE = "conveyor/promotion-gate"
PROD = "apps/web/overlays/prod/kustomization.yaml"
ARGO_POLICY = DEMO_POLICY.replace(
    '    deployed_by: ["argocd[bot]"]\n', '    deployed_by: ["argocd-notifications[bot]"]\n')
WORKER_KUSTOMIZATION = DEMO_FILES["apps/web/overlays/staging/kustomization.yaml"].replace(
    "ghcr.io/acme/web", "ghcr.io/acme/worker")


def summary(run: dict[str, Any]) -> str:
    """The gate's summary as a reader sees it (Markdown escapes removed)."""
    return unescape_markdown(str(run["output"]["summary"]))


def deployed_line(run: dict[str, Any], subject: str) -> str:
    """The summary's line about the deployed evidence of one image change."""
    text = summary(run)
    section = text.split(f"### {subject}", 1)[1].split("###", 1)[0]
    return next(line for line in section.splitlines() if "deployed" in line)


async def world_with(policy: str, files: dict[str, str] | None = None) -> World:
    return await make_world(files={**DEMO_FILES, **(files or {}), ".github/conveyor.yml": policy})


@pytest.fixture
async def argo_world() -> AsyncIterator[World]:
    world = await world_with(ARGO_POLICY)
    ArgoCD(world).install()
    try:
        yield world
    finally:
        await close_world(world)
    assert world.emulator.violations == [], world.emulator.violations


async def staged(world: World, service: str = "web", version: str = "1.0.0") -> str:
    digest = await world.release(service, version)
    assert world.pull(f"Promote {service} {version} to staging")["merged"]
    return digest


def head(world: World) -> str:
    return str(world.emulator.commit(world.repo, "main")["sha"])


async def approve_and_soak(world: World, pr: dict[str, Any]) -> dict[str, Any]:
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    world.clock.advance(minutes=31)
    world.conveyor.ctx.scheduler.fire_due()
    await world.settle()
    return world.gate(pr)


async def test_each_service_needs_its_own_argo_cd_application(argo_world: World) -> None:
    world, argo = argo_world, ArgoCD(argo_world)
    policy = ARGO_POLICY.replace("  api:\n", "  worker:\n    image: ghcr.io/acme/worker\n"
                                 "    source: acme/worker\n  api:\n")
    world.emulator.add_repo("acme/worker", files={"README.md": "# worker\n"})
    await world.emulator.add_installation_repos(world.demo.installation_id, ["acme/worker"])
    await world.emulator.push_files(world.repo, {
        ".github/conveyor.yml": policy,
        "apps/worker/overlays/staging/kustomization.yaml": WORKER_KUSTOMIZATION,
        "apps/worker/overlays/prod/kustomization.yaml": WORKER_KUSTOMIZATION,
    }, author="bob", message="Add the worker")
    await world.settle()
    digests = {service: await staged(world, service) for service in ("web", "api", "worker")}
    prs = {
        "web": await hand_pr(world, PROD, pinned_kustomization("1.0.0", digests["web"]),
                             branch="hand/web", title="web to production"),
        "api": await hand_pr(
            world, "charts/api/values-production.yaml",
            DEMO_FILES["charts/api/values-production.yaml"].replace(
                'tag: "0.9.0"', f'tag: "1.0.0@{digests["api"]}"'),
            branch="hand/api", title="api to production"),
        "worker": await hand_pr(
            world, "apps/worker/overlays/prod/kustomization.yaml",
            pinned_kustomization("1.0.0", digests["worker"]).replace(
                "ghcr.io/acme/web", "ghcr.io/acme/worker"),
            branch="hand/worker", title="worker to production"),
    }

    # Argo CD syncs web-staging only: its label says nothing about api or worker.
    await argo.status("web-staging", head(world))
    gates = {s: world.gate(world.pull(f"{s} to production", "open")) for s in prs}
    assert "deployed in staging" in deployed_line(gates["web"], "web → production")
    assert "status argocd/web-staging success" in deployed_line(gates["web"], "web → production")
    assert "by argocd-notifications[bot]" in deployed_line(gates["web"], "web → production")
    for service in ("api", "worker"):
        assert "no deployed evidence from staging" in \
            deployed_line(gates[service], f"{service} → production")

    # api's Application reports with a check run, worker's with a deployment status.
    await argo.check_run("api-staging", head(world))
    await argo.deployment("worker-staging", head(world), "staging")
    gates = {s: world.gate(world.pull(f"{s} to production", "open")) for s in prs}
    assert "check run argocd/api-staging success" in \
        deployed_line(gates["api"], "api → production")
    assert "deployment staging success" in \
        deployed_line(gates["worker"], "worker → production")
    deployment = world.emulator.deployments(world.repo)[0]
    assert deployment["payload"] == {} and deployment["creator"]["login"] == argo.login


@pytest.mark.parametrize(("context", "expr", "reported"), [
    ("kustomization/{service}-{env}/*", False, "kustomization/web-staging/0c9c2e41"),
    ("flux/{service}-{env}", True, "flux/web-staging"),  # commitStatusExpr
])
async def test_flux_context_with_the_provider_id(context: str, expr: bool, reported: str
                                                 ) -> None:
    world = await world_with(DEMO_POLICY.replace(
        "    deployed_context: argocd/{service}-{env}   # Argo CD labels its statuses per "
        "Application\n    deployed_by: [\"argocd[bot]\"]\n",
        f"    deployed_context: {context}\n    deployed_by: [flux-bot]\n"))
    try:
        flux = Flux(world, commit_status_expr=expr)
        world.emulator.add_user("flux-bot")
        world.emulator.set_permission(world.repo, "flux-bot", "write")
        digest = await staged(world)
        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
        # Another Kustomization of the same cluster is not web's; a Progressing event posts
        # nothing.
        await flux.event("web-staging-canary", f"main@sha1:{head(world)}")
        await flux.event("web-staging", f"main@sha1:{head(world)}", reason="Progressing")
        assert "no deployed evidence" in deployed_line(world.gate(pr), "web → production")

        await flux.event("web-staging", f"main@sha1:{head(world)}")
        line = deployed_line(world.gate(pr), "web → production")
        assert f"status {reported} success" in line
        assert "by flux-bot" in line
        assert (await approve_and_soak(world, pr))["conclusion"] == "success"
        # A failed health check on the same revision takes the evidence away.
        await flux.event("web-staging", f"main@sha1:{head(world)}", severity="error",
                         reason="HealthCheckFailed")
        assert world.gate(pr)["conclusion"] == "failure"
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_evidence_reported_forty_commits_after_the_merge(argo_world: World) -> None:
    world, argo = argo_world, ArgoCD(argo_world)
    digest = await staged(world)
    merge = head(world)
    for index in range(40):
        await world.emulator.push_files(world.repo, {"docs/notes.md": f"note {index}\n"},
                                        author="alice", message=f"Note {index}")
    await world.settle()
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    assert head(world) != merge

    world.emulator.reset_counters()
    await argo.status("web-staging", head(world))
    line = deployed_line(world.gate(pr), "web → production")
    assert f"on {head(world)[:7]} by argocd-notifications[bot]" in line
    requests = world.emulator.requests
    # 41 default-branch commits pin the digest (the merge and 40 notes): every one is searched
    # for statuses and check runs, once per open pull request's evaluation; and its head, for
    # reports named like the gate (this repository does not require the gate)
    searched = requests.count("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses")
    assert searched == requests.count("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs")
    assert searched == (41 + 1) * len(world.open_pulls())
    assert (await approve_and_soak(world, pr))["conclusion"] == "success"


async def test_a_forged_status_by_a_writer_does_not_count(argo_world: World) -> None:
    world = argo_world
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    # alice may write to the repository, so GitHub lets her post any status.
    await world.emulator.set_status(world.repo, head(world), "argocd/web-staging", "success",
                                    user="alice")
    await world.settle()
    # a report from someone not in deployed_by re-evaluates nothing; the next evaluation says
    # why it does not count
    assert "ignored" not in summary(world.gate(pr))
    await world.emulator.comment(world.repo, pr["number"], "bob", "/recheck")
    await world.settle()
    run = world.gate(pr)
    assert run["conclusion"] == "failure"
    line = deployed_line(run, "web → production")
    assert "no deployed evidence from staging" in line
    assert "ignored: status argocd/web-staging success" in line
    assert "by alice (not in deployed_by)" in line


async def test_a_deployment_whose_payload_names_the_digest_is_no_evidence_for_it(
        argo_world: World) -> None:
    """Only a deployment of a commit that pins the digest speaks about it: a writer's
    deployment of another commit whose payload names the digest does not, even once Argo CD
    reports its sync of that commit on it."""
    world, argo = argo_world, ArgoCD(argo_world)
    failed = await staged(world, "web", "1.0.0")
    await argo.status("web-staging", head(world), "failure")
    assert await staged(world, "web", "1.1.0") != failed
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", failed))
    # alice may write to the repository: a deployment of main's head (which runs 1.1.0) for
    # staging, no status, whose payload names the digest that failed there
    await world.emulator.create_deployment(world.repo, head(world), "staging", state="",
                                           user="alice", payload={"digest": failed})
    # Argo CD reports its sync of main's head on the first deployment listed for it: alice's
    await argo.deployment("web-staging", head(world), "staging")
    assert world.emulator.deployments(world.repo)[0]["creator"]["login"] == "alice"
    await world.emulator.comment(world.repo, pr["number"], "bob", "/recheck")
    await world.settle()
    run = world.gate(pr)
    assert run["conclusion"] == "failure"
    line = deployed_line(run, "web → production")
    assert "deployment staging" not in line
    assert "the latest report is a failure: status argocd/web-staging failure" in line


async def test_conveyor_own_source_deployment_is_not_evidence_in_a_single_repository() -> None:
    policy = DEMO_POLICY.replace("    source: acme/web\n", "    source: acme/deploy\n").replace(
        "    deployed_context: argocd/{service}-{env}   # Argo CD labels its statuses per "
        "Application\n", "")
    world = await world_with(policy)
    try:
        digest = digest_of("web:1.0.0")
        await world.emulator.publish_container("acme", "web", digest, ["1.0.0"],
                                               source_repo=world.repo)
        await world.emulator.create_tag(world.repo, "v1.0.0")
        await world.emulator.publish_release(world.repo, "v1.0.0", author="alice")
        await world.settle()
        assert world.pull("Promote web 1.0.0 to staging")["merged"]
        # Conveyor told the source repository (this one) where its commit runs.
        own = [d for d in world.emulator.deployments(world.repo)
               if d["environment"] == "staging"]
        assert own and own[0]["creator"]["login"] == "conveyor[bot]"
        assert own[0]["payload"]["digest"] == digest

        pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
        run = await approve_and_soak(world, pr)
        assert run["conclusion"] == "failure"
        line = deployed_line(run, "web → production")
        assert "no deployed evidence from staging" in line
        # it deploys the source commit, which pins nothing: it is not read as a report
        assert "deployment staging" not in line
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_failure_after_a_success_fails_the_gate_again(argo_world: World) -> None:
    world, argo = argo_world, ArgoCD(argo_world)
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await argo.deployment("web-staging", head(world), "staging")
    assert (await approve_and_soak(world, pr))["conclusion"] == "success"

    # The next sync of the same revision degrades: the deployment reports a failure.
    world.clock.advance(minutes=5)
    await argo.deployment("web-staging", head(world), "staging", state="failure")
    run = world.gate(pr)
    assert run["conclusion"] == "failure"
    assert "the latest report is a failure: deployment staging failure" in \
        deployed_line(run, "web → production")

    # A pending report changes nothing; a new success brings the evidence back and soaks anew.
    await argo.status("web-staging", head(world), "pending")
    assert world.gate(pr)["conclusion"] == "failure"
    world.clock.advance(minutes=5)
    await argo.status("web-staging", head(world))
    assert world.gate(pr)["status"] == "in_progress"  # soaking since the new success


@pytest.mark.parametrize("kind", ["status", "deployment"])
async def test_a_failure_in_the_same_second_as_the_success_wins(argo_world: World,
                                                                kind: str) -> None:
    """GitHub's timestamps have one-second resolution and Argo CD often posts twice in one
    second: the report GitHub made last (the higher id) is the newest."""
    world, argo = argo_world, ArgoCD(argo_world)
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    world.clock.advance(minutes=31)
    if kind == "status":
        await argo.status("web-staging", head(world))
        await argo.status("web-staging", head(world), "error")
    else:
        await argo.deployment("web-staging", head(world), "staging")
        await argo.deployment("web-staging", head(world), "staging", state="failure")
    world.conveyor.ctx.scheduler.fire_due()
    await world.settle()
    run = world.gate(pr)
    assert run["conclusion"] == "failure", summary(run)
    assert "the latest report is a" in deployed_line(run, "web → production")


async def test_argo_cd_deployments_of_an_older_revision_need_auto_merge_off(
        argo_world: World) -> None:
    world, argo = argo_world, ArgoCD(argo_world)
    digest = await staged(world)
    synced = head(world)
    await world.emulator.push_files(world.repo, {"docs/notes.md": "later\n"}, author="alice")
    await world.settle()
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    # Argo CD's default autoMerge: true asks GitHub to merge main into the synced sha: refused.
    assert await argo.deployment("web-staging", synced, "staging") is None
    assert "no deployed evidence" in deployed_line(world.gate(pr), "web → production")
    assert await argo.deployment("web-staging", synced, "staging", auto_merge=False)
    assert f"deployment staging success on {synced[:7]}" in \
        deployed_line(world.gate(pr), "web → production")


async def test_a_merge_commit_sets_the_digest_and_older_reports_do_not_count(
        argo_world: World) -> None:
    """A hand-made staging change merged with a merge commit: git's history of the file names
    the branch's commit, not the merge; reports on main before the merge are about the old
    digest."""
    world, argo = argo_world, ArgoCD(argo_world)
    digest = digest_of("web:1.0.0")
    before = head(world)
    await argo.status("web-staging", before)  # Argo CD ran the old digest here
    staging = "apps/web/overlays/staging/kustomization.yaml"
    await world.emulator.push_files(world.repo, {staging: pinned_kustomization("1.0.0", digest)},
                                    branch="hand/staging", author="alice", message="web 1.0.0")
    await world.emulator.push_files(world.repo, {"docs/notes.md": "on main meanwhile\n"},
                                    author="bob", message="Notes")
    opened = await world.emulator.open_pull(world.repo, "hand/staging", title="web to staging",
                                            author="alice")
    await world.emulator.merge_pull(world.repo, opened["number"], user="bob", method="merge")
    await world.settle()
    merge = world.emulator.commit(world.repo, "main")
    assert len(merge["parents"]) == 2
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await world.emulator.comment(world.repo, pr["number"], "bob", "/recheck")
    await world.settle()
    line = deployed_line(world.gate(pr), "web → production")
    assert "no deployed evidence from staging" in line, line

    await argo.status("web-staging", merge["sha"])
    line = deployed_line(world.gate(pr), "web → production")
    assert f"on {merge['sha'][:7]} by argocd-notifications[bot]" in line


async def test_the_config_check_gives_a_notice_without_deployed_by(world: World) -> None:
    policy = DEMO_POLICY.replace('    deployed_by: ["argocd[bot]"]\n', "")
    pr = await hand_pr(world, ".github/conveyor.yml", policy, title="Trust any reporter")
    run = world.emulator.check_runs(world.repo, pr["head"]["sha"], "conveyor/config-check")[0]
    assert run["conclusion"] == "success"
    line = policy.splitlines().index("    evidence: [merged, deployed]") + 1
    notices = [a for a in run["output"]["annotations"] if a["annotation_level"] == "notice"]
    assert [(a["path"], a["start_line"]) for a in notices] == [(".github/conveyor.yml", line)]
    assert "deployed_by" in notices[0]["message"]
    assert "### Notices" in run["output"]["summary"]
