"""Attestations verified over HTTP: the emulator serves bundles its own Sigstore instances
signed (public-good for public repositories, GitHub's own for private ones), and bundles that
must not verify; the bot names each with its reason in the PR body and, where production
requires an attestation, in the gate."""

from __future__ import annotations

import base64
import copy
import json

import aiohttp
import gidgethub
import pytest

from bot.promotion.opening.attestations import check_attestation
from bot.sandbox.demo import DEMO_POLICY, digest_of
from bot.text import unescape_markdown
from conveyor_emulator.sigstore.instance import SigstoreInstance
from tests.flows.test_trace import (
    SOURCE,
    built_release,
    merged_source_change,
    pass_production_gate,
    pass_production_gate_attempt,
    provenance_rows,
)
from tests.harness import World


def summary(world: World, pr: dict[str, object]) -> str:
    """The gate's summary as GitHub shows it."""
    return unescape_markdown(str(world.gate(pr)["output"]["summary"]))


async def require_attestations(world: World, signer: str | None) -> None:
    """Production follows staging automatically and requires an attestation; web pins
    `signer` (None: no pin)."""
    policy = DEMO_POLICY.replace("    promote: manual\n",
                                 "    promote: auto\n    require_attestation: true\n")
    pinned = ("    signer_workflow: .github/workflows/release.yml@refs/tags/*   # who must sign "
              "its attestations")
    assert pinned in policy
    policy = policy.replace(pinned + "\n", f"    signer_workflow: {signer}\n" if signer else "",
                            1)
    await world.emulator.push_files(world.repo, {".github/conveyor.yml": policy},
                                    author="bob", message="Production requires attestations")
    await world.settle()


async def test_another_workflow_than_the_pinned_one_fails_the_gate_until_it_signs(
        world: World) -> None:
    await require_attestations(world, ".github/workflows/release.yml@refs/tags/*")
    _, sha = await merged_source_change(world)
    digest = await built_release(world, "1.4.2", sha, workflow=".github/workflows/ci.yml")
    production = world.pull("Promote web 1.4.2 to production", state="open")
    reason = ("signed by workflow acme/web/.github/workflows/ci.yml@refs/tags/v1.4.2, the "
              "policy pins .github/workflows/release.yml@refs/tags/*")
    assert reason in provenance_rows(production["body"])["Attestation"]
    await pass_production_gate_attempt(world, production)
    run = world.gate(production)
    assert run["conclusion"] == "failure"
    assert reason in summary(world, production)

    # the release workflow attests the same image; the next evaluation counts it
    world.emulator.add_attestation(SOURCE, digest, commit=sha, ref="refs/tags/v1.4.2")
    await world.emulator.comment(world.repo, production["number"], "bob", "/recheck")
    await world.settle()
    run = world.gate(production)
    assert run["conclusion"] == "success", run["output"]
    assert "attested: built by acme/web/.github/workflows/release.yml@refs/tags/v1.4.2" in \
        summary(world, production)


async def test_a_changed_statement_is_named_and_refused(world: World) -> None:
    await require_attestations(world, ".github/workflows/release.yml@refs/tags/*")
    _, sha = await merged_source_change(world)
    digest = digest_of("web:1.4.2")
    signed = world.emulator.add_attestation(SOURCE, digest_of("web:0.0.1"), commit=sha,
                                            ref="refs/tags/v1.4.2")
    forged = copy.deepcopy(signed)
    statement = copy.deepcopy(signed)["dsseEnvelope"]["payload"]
    body = json.loads(base64.b64decode(statement))
    body["subject"][0]["digest"]["sha256"] = digest.removeprefix("sha256:")
    forged["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(body).encode()).decode()
    world.emulator.add_attestation_bundle(SOURCE, digest, forged)
    await built_release(world, "1.4.2", sha, attested_repo=None)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    cell = provenance_rows(production["body"])["Attestation"]
    assert cell.startswith("❌ refused: the attestation (its certificate names "), cell
    assert cell.endswith(") does not verify: the signature does not verify"), cell
    await pass_production_gate_attempt(world, production)
    run = world.gate(production)
    assert run["conclusion"] == "failure"
    assert "does not verify: the signature does not verify" in summary(world, production)


async def test_a_bundle_of_a_sigstore_nobody_trusts_is_refused(world: World) -> None:
    await require_attestations(world, None)
    _, sha = await merged_source_change(world)
    digest = digest_of("web:1.4.2")
    # signed like the real thing, by an instance of the same name with other keys
    stranger = SigstoreInstance.public_good(world.emulator.world.sigstore.public_good.name)
    saved = world.emulator.world.sigstore.public_good
    world.emulator.world.sigstore.public_good = stranger
    world.emulator.add_attestation(SOURCE, digest, commit=sha, ref="refs/tags/v1.4.2")
    world.emulator.world.sigstore.public_good = saved
    await built_release(world, "1.4.2", sha, attested_repo=None)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    assert "no trusted root holds" in provenance_rows(production["body"])["Attestation"]
    await pass_production_gate_attempt(world, production)
    assert world.gate(production)["conclusion"] == "failure"


async def test_a_private_repositorys_attestation_is_verified_by_its_timestamp(
        world: World) -> None:
    """GitHub's own instance signs a private repository's attestations: an RFC 3161
    timestamp, no transparency-log entry."""
    world.emulator.world.repo_by_name(SOURCE).private = True
    await require_attestations(world, ".github/workflows/release.yml@refs/tags/*")
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha)
    bundle = world.emulator.world.repo_by_name(SOURCE).attestations[-1].bundle
    assert bundle["verificationMaterial"]["tlogEntries"] == []
    production = world.pull("Promote web 1.4.2 to production", state="open")
    assert provenance_rows(production["body"])["Attestation"].startswith("✅ verified: ")
    await pass_production_gate(world, production)
    assert "verified against the emulated-github root" in summary(world, production)


async def test_a_bundle_is_verified_once_however_often_the_gate_reads_it(
        world: World) -> None:
    await require_attestations(world, None)
    _, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha)
    production = world.pull("Promote web 1.4.2 to production", state="open")
    trust = world.conveyor.ctx.attestations
    kept = len(trust.verifier._verdicts)
    for _ in range(3):
        await world.emulator.comment(world.repo, production["number"], "bob", "/recheck")
        await world.settle()
    assert len(trust.verifier._verdicts) == kept == 1


async def test_healthz_names_the_trusted_roots(world: World) -> None:
    async with aiohttp.ClientSession() as session, \
            session.get(world.bot.base_url + "/healthz") as response:
        body = await response.json()
    assert body["sigstore"]["source"] == ("CONVEYOR_SIGSTORE_TRUST (the emulator's "
                                          "Sigstore)")
    assert list(body["sigstore"]["roots"]) == ["emulated-public-good", "emulated-github"]
    assert "problem" not in body["sigstore"]


async def test_status_says_where_attestations_are_required_and_who_must_sign(
        world: World) -> None:
    await require_attestations(world, None)
    created = await world.emulator.open_issue(world.repo, "Where are we?", author="alice")
    posted = await world.emulator.comment(world.repo, created["number"], "alice", "/status")
    await world.settle()
    [reply] = [c["body"] for c in world.emulator.comments(world.repo, created["number"])
               if c["user"]["login"] == "conveyor[bot]"]
    section = unescape_markdown(reply.split("### Attestations", 1)[1])
    assert "Required in production: a promotion needs a verified attestation." in section
    assert "- web: signed by any workflow of acme/web (no signer_workflow)" in section
    assert "- api: signed by `.github/workflows/release.yml@refs/tags/*`" in section
    assert "Trusted Sigstore roots: emulated-public-good (refreshed " in section
    assert posted["id"]


async def test_attestations_github_does_not_list_are_unavailable_to_the_gate(
        world: World) -> None:
    """A 5xx while listing: the gate's condition fails closed with GitHub's answer; a
    promotion's job fails, to be retried."""
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    world.emulator.faults.update({"error_rate": 1.0})
    check = await check_attestation(gh, world.conveyor.ctx.attestations,
                                    web_url=world.emulator.web_url, source=SOURCE,
                                    digest=digest_of("web:9.9.9"), signer=None, lenient=True)
    assert check.state == "unavailable"
    assert check.reasons[0].startswith("GitHub did not list them: ")
    with pytest.raises(gidgethub.GitHubException):
        await check_attestation(gh, world.conveyor.ctx.attestations,
                                web_url=world.emulator.web_url, source=SOURCE,
                                digest=digest_of("web:9.9.8"), signer=None)
    world.emulator.faults.update({"error_rate": 0.0})
