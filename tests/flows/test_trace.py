"""Traceability over HTTP: provenance in the PR body, the gate's attestation check, and the
source repository told where its commit runs (deployments and one edited PR comment)."""

from __future__ import annotations

from typing import Any

from bot.sandbox.demo import DEMO_POLICY, digest_of
from bot.text import unescape_markdown
from tests.harness import World

SOURCE = "acme/web"
GATE = "conveyor/promotion-gate"


async def use_policy(world: World, *, require_attestation: bool = False) -> None:
    """Production follows staging automatically (and may demand an attestation)."""
    policy = DEMO_POLICY.replace("    promote: manual\n", "    promote: auto\n")
    if require_attestation:
        policy = policy.replace("    promote: auto\n",
                                "    promote: auto\n    require_attestation: true\n")
    await world.emulator.push_files(world.repo, {".github/conveyor.yml": policy},
                                    author="bob", message="Production follows staging")
    await world.settle()


async def merged_source_change(world: World, branch: str = "feature/greeting",
                               title: str = "Greet politely") -> tuple[dict[str, Any], str]:
    """alice's PR in the source repository, merged by bob: (the PR, the commit on main)."""
    await world.emulator.push_files(SOURCE, {"src/app.py": f"print('{title}')\n"},
                                    branch=branch, author="alice", message=title)
    pr = await world.emulator.open_pull(SOURCE, branch, title=title, author="alice")
    merged = await world.emulator.merge_pull(SOURCE, pr["number"], user="bob")
    await world.settle()
    return merged, world.emulator.commit(SOURCE, "main")["sha"]


async def built_release(world: World, version: str, sha: str, *,
                        attested_repo: str | None = SOURCE, attested_commit: str | None = None,
                        run: bool = True, workflow: str = ".github/workflows/release.yml"
                        ) -> str:
    """The release of the commit, and CI's build of it: workflow run, image with OCI labels,
    artifact attestation by `attested_repo`'s `workflow` (none when `attested_repo` is
    None)."""
    digest = digest_of(f"web:{version}")
    await world.emulator.create_tag(SOURCE, f"v{version}", sha)
    if run:
        world.emulator.add_workflow_run(SOURCE, sha, name="release")
    if attested_repo is not None:
        world.emulator.add_attestation(attested_repo, digest, commit=attested_commit or sha,
                                       workflow_path=workflow, ref=f"refs/tags/v{version}")
    await world.emulator.publish_release(SOURCE, f"v{version}", author="alice")
    await world.settle()  # the release waits for its image; the package event completes it
    await world.emulator.publish_container("acme", "web", digest, [version],
                                           source_repo=SOURCE, revision=sha)
    await world.settle()
    return digest


async def pass_production_gate(world: World, pr: dict[str, Any]) -> None:
    """Argo CD reports staging, an SRE approves, the soak runs out."""
    head = world.emulator.commit(world.repo, "main")["sha"]
    await world.emulator.set_status(world.repo, head, "argocd/web-staging", "success")
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    await world.settle()
    world.clock.advance(minutes=31)
    world.conveyor.ctx.scheduler.fire_due()
    await world.settle()
    assert world.gate(pr)["conclusion"] == "success", world.gate(pr)["output"]


def provenance_rows(body: str) -> dict[str, str]:
    section = body.split("### Provenance", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in section.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = unescape_markdown(cells[1])  # as GitHub shows it
    return rows


async def test_provenance_table_links_release_commit_run_attestation_and_compare(
        world: World) -> None:
    _, first = await merged_source_change(world, "feature/one", "First change")
    await built_release(world, "1.4.1", first)
    assert world.pull("Promote web 1.4.1 to staging")["merged"]
    await merged_source_change(world, "feature/two", "Second change")
    await world.emulator.push_files(SOURCE, {"README.md": "# web, documented\n"},
                                    author="alice", message="Docs straight on main")
    third = world.emulator.commit(SOURCE, "main")["sha"]
    await built_release(world, "1.4.2", third)

    rows = provenance_rows(world.pull("Promote web 1.4.2 to staging")["body"])
    base = world.emulator.base_url.removesuffix("/api/v3")
    assert rows["Release"] == f"[v1.4.2]({base}/acme/web/releases/tag/v1.4.2)"
    assert rows["Source commit"] == (f"[{third[:12]} (tag v1.4.2)]"
                                     f"({base}/acme/web/commit/{third})")
    assert "/acme/web/actions/runs/" in rows["CI workflow run"]
    assert rows["CI workflow run"].startswith("[release.yml run ")
    assert rows["Attestation"] == (
        "✅ verified: workflow [acme/web/.github/workflows/release.yml@refs/tags/v1.4.2]"
        f"({base}/acme/web/attestations), repository acme/web, commit {third[:12]}")
    assert rows["Source changes"] == (f"[v1.4.1...v1.4.2 (2 commits)]"
                                      f"({base}/acme/web/compare/v1.4.1...v1.4.2)")
    assert rows["Package version"].startswith("[ghcr.io/acme/web@sha256:")
    assert "CAUTION" not in world.pull("Promote web 1.4.2 to staging")["body"]


async def test_without_attestation_the_run_of_the_commit_is_linked(world: World) -> None:
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha, attested_repo=None)
    rows = provenance_rows(world.pull("Promote web 1.4.2 to staging")["body"])
    assert rows["Attestation"] == "not attested"
    assert rows["CI workflow run"].startswith("[release #1](")
    assert sha[:12] in rows["Source commit"]
    assert rows["Source changes"] == "not found"  # 0.9.0 was never released as a git tag


async def test_attestation_from_another_repository_is_refused_and_shown(world: World) -> None:
    """acme/api's workflow attested the image: its certificate names acme/api, not the policy's
    source. Shown on both PRs; without require_attestation it does not block the gate."""
    await use_policy(world)
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha, attested_repo="acme/api")

    staging = world.pull("Promote web 1.4.2 to staging")
    reason = "built from acme/api, but the policy's source is acme/web"
    assert "> [!CAUTION]" in staging["body"]
    assert reason in provenance_rows(staging["body"])["Attestation"]
    assert provenance_rows(staging["body"])["Attestation"].startswith("❌ refused: ")
    production = world.pull("Promote web 1.4.2 to production", state="open")
    assert reason in production["body"]
    await pass_production_gate(world, production)
    assert "attest" not in world.gate(production)["output"]["summary"]


async def test_required_attestation_from_another_repository_fails_the_gate(
        world: World) -> None:
    await use_policy(world, require_attestation=True)
    _, sha = await merged_source_change(world)
    digest = await built_release(world, "1.4.2", sha, attested_repo="acme/api")
    production = world.pull("Promote web 1.4.2 to production", state="open")
    await pass_production_gate_attempt(world, production)
    run = world.gate(production)
    assert run["conclusion"] == "failure", run["output"]
    assert (f"the attestation of {digest[:19]} is refused: the attestation: built from "
            "acme/api, but the policy's source is acme/web"
            ) in unescape_markdown(run["output"]["summary"])


async def pass_production_gate_attempt(world: World, pr: dict[str, Any]) -> None:
    """Everything else the gate asks for is there, so only provenance can fail it."""
    head = world.emulator.commit(world.repo, "main")["sha"]
    await world.emulator.set_status(world.repo, head, "argocd/web-staging", "success")
    await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
    world.clock.advance(minutes=31)
    await world.settle()
    world.conveyor.ctx.scheduler.fire_due()
    await world.settle()


async def test_attestation_naming_another_commit_fails_a_gate_that_requires_one(
        world: World) -> None:
    await use_policy(world, require_attestation=True)
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha, attested_commit="f" * 40)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    assert f"built from commit ffffffffffff, but the release points at {sha[:12]}" in \
        production["body"]
    await pass_production_gate_attempt(world, production)
    run = world.gate(production)
    assert run["conclusion"] == "failure"
    assert "ffffffffffff" in run["output"]["summary"]


async def test_require_attestation_without_one_fails_the_gate(world: World) -> None:
    await use_policy(world, require_attestation=True)
    _, sha = await merged_source_change(world)
    digest = await built_release(world, "1.4.2", sha, attested_repo=None)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    await pass_production_gate_attempt(world, production)
    run = world.gate(production)
    assert run["conclusion"] == "failure", run["output"]
    assert f"no attestation found for {digest[:19]} in acme/web" in run["output"]["summary"]


async def test_require_attestation_with_a_matching_one_passes(world: World) -> None:
    await use_policy(world, require_attestation=True)
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    await pass_production_gate(world, production)
    assert (f"attested: built by acme/web/.github/workflows/release.yml@refs/tags/v1.4.2 at "
            f"commit {sha[:12]}, verified against the emulated-public-good root"
            ) in unescape_markdown(world.gate(production)["output"]["summary"])


def conveyor_comments(world: World, number: int) -> list[dict[str, Any]]:
    return [c for c in world.emulator.comments(SOURCE, number)
            if c["user"]["login"] == "conveyor[bot]"]


async def test_merged_promotions_are_reported_to_the_source_repository(world: World) -> None:
    await use_policy(world)
    source_pr, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha)
    staging = world.pull("Promote web 1.4.2 to staging")
    assert staging["merged"]

    deployments = world.emulator.deployments(SOURCE)
    assert len(deployments) == 1
    deployment = deployments[0]
    assert (deployment["sha"], deployment["environment"]) == (sha, "staging")
    assert deployment["payload"]["service"] == "web"
    assert deployment["payload"]["digest"] == digest_of("web:1.4.2")
    assert deployment["payload"]["promotion_pr"] == staging["html_url"]
    assert deployment["payload"]["deployment_repo"] == "acme/deploy"
    assert [(s["state"], s["log_url"]) for s in deployment["statuses"]] == \
        [("success", staging["html_url"])]
    comments = conveyor_comments(world, source_pr["number"])
    assert len(comments) == 1
    first_id = comments[0]["id"]
    assert f"to staging in acme/deploy#{staging['number']}." in comments[0]["body"]

    # the same merge delivered again (a fresh delivery, not a redelivery) changes nothing
    closed = next(d for d in world.emulator.deliveries
                  if d.event == "pull_request" and d.action == "closed"
                  and d.payload["repository"]["full_name"] == world.repo)
    await world.emulator.send_event("pull_request", closed.payload)
    await world.settle()
    assert len(world.emulator.deployments(SOURCE)) == 1
    assert len(world.emulator.deployments(SOURCE)[0]["statuses"]) == 1
    assert len(conveyor_comments(world, source_pr["number"])) == 1

    production = world.pull("Promote web 1.4.2 to production", state="open")
    await pass_production_gate(world, production)
    await world.emulator.merge_pull(world.repo, production["number"], user="bob")
    await world.settle()

    deployments = world.emulator.deployments(SOURCE)
    assert sorted((d["sha"], d["environment"]) for d in deployments) == \
        [(sha, "production"), (sha, "staging")]
    prod = next(d for d in deployments if d["environment"] == "production")
    assert [(s["state"], s["log_url"]) for s in prod["statuses"]] == \
        [("success", production["html_url"])]
    comments = conveyor_comments(world, source_pr["number"])
    assert len(comments) == 1, "edited, never a second comment"
    assert comments[0]["id"] == first_id
    assert (f"to staging in acme/deploy#{staging['number']}, "
            f"to production in acme/deploy#{production['number']}.") in comments[0]["body"]


async def test_a_closed_unmerged_promotion_reports_nothing(world: World) -> None:
    await use_policy(world)
    source_pr, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    await world.emulator.close_pull(world.repo, production["number"], user="bob")
    await world.settle()
    assert [d["environment"] for d in world.emulator.deployments(SOURCE)] == ["staging"]
    assert len(conveyor_comments(world, source_pr["number"])) == 1


async def test_a_rollback_marks_the_earlier_commit_live_again(world: World) -> None:
    first_pr, first = await merged_source_change(world, "feature/one", "First change")
    await built_release(world, "1.4.1", first)
    second_pr, second = await merged_source_change(world, "feature/two", "Second change")
    world.clock.advance(minutes=5)
    await built_release(world, "1.4.2", second)
    assert world.pull("Promote web 1.4.2 to staging")["merged"]

    issue = await world.emulator.open_issue(world.repo, "Staging is broken", author="alice")
    world.clock.advance(minutes=5)
    await world.emulator.comment(world.repo, issue["number"], "bob", "/rollback web staging")
    await world.settle()
    rollback = world.pull("Roll back web in staging to 1.4.1 (from 1.4.2)")
    assert rollback["merged"], rollback

    earlier = [d for d in world.emulator.deployments(SOURCE) if d["sha"] == first]
    assert len(earlier) == 1, "the same (commit, environment) deployment is reused"
    assert [(s["state"], s["log_url"]) for s in earlier[0]["statuses"]] == [
        ("success", world.pull("Promote web 1.4.1 to staging")["html_url"]),
        ("success", rollback["html_url"]),
    ]
    [comment] = conveyor_comments(world, first_pr["number"])
    assert f"to staging in acme/deploy#{rollback['number']} (rollback)." in comment["body"]
    assert len(conveyor_comments(world, second_pr["number"])) == 1


async def test_an_attestation_kept_by_the_organisation_is_found_and_judged(
        world: World) -> None:
    """The image was attested by a build repository of the org, not by the source itself:
    the organisation lists it, and its certificate names that repository."""
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha, attested_repo="acme/api",
                        workflow=".github/workflows/images.yml")
    body = world.pull("Promote web 1.4.2 to staging")["body"]
    assert "built from acme/api, but the policy's source is acme/web" in \
        provenance_rows(body)["Attestation"]
    assert world.emulator.requests.count("GET", "/orgs/{org}/attestations/{subject_digest}")
