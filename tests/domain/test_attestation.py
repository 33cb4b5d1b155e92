"""Verified bundles judged against the policy: the subject, the issuer, the source
repository, the pinned signer workflow, the release's commit; every failing bundle named."""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain.attestation import (
    GITHUB_ACTIONS_ISSUER,
    SLSA_PROVENANCE_V1,
    AttestationCheck,
    BundleVerdict,
    SignerIdentity,
    SignerWorkflow,
    judge,
    parse_signer_workflow,
)

WEB = "https://github.com"
DIGEST = "sha256:" + "b" * 64
SHA = "a" * 40


def verdict(*, repository: str = "acme/web", workflow: str = ".github/workflows/release.yml",
            ref: str = "refs/tags/v1.4.2", signer: str | None = None,
            issuer: str = GITHUB_ACTIONS_ISSUER, subjects: tuple[str, ...] = (DIGEST,),
            predicate: str = SLSA_PROVENANCE_V1, commit: str = SHA,
            server: str = WEB) -> BundleVerdict:
    return BundleVerdict(
        problem=None, root="public-good", predicate_type=predicate, subjects=subjects,
        identity=SignerIdentity(
            issuer=issuer,
            signer_uri=f"{server}/{signer or f'{repository}/{workflow}@{ref}'}",
            source_repository_uri=f"{server}/{repository}", source_commit=commit,
            source_ref=ref, run_uri=f"{server}/{repository}/actions/runs/77/attempts/1"))


def pinned(text: str) -> SignerWorkflow:
    parsed = parse_signer_workflow(text)
    assert isinstance(parsed, SignerWorkflow), parsed
    return parsed


def judged(*verdicts: BundleVerdict, signer: str | None = None, **options: Any
           ) -> AttestationCheck:
    return judge(verdicts, digest=DIGEST, source="acme/web", web_url=WEB,
                 signer=pinned(signer) if signer else None, **options)


def test_a_matching_bundle_is_verified_with_its_build() -> None:
    check = judged(verdict(), signer=".github/workflows/release.yml@refs/tags/*")
    assert check.verified
    assert check.build is not None
    assert (check.build.workflow, check.build.repository, check.build.commit,
            check.build.root) == ("acme/web/.github/workflows/release.yml@refs/tags/v1.4.2",
                                  "acme/web", SHA, "public-good")
    assert check.reasons == ()


@pytest.mark.parametrize(("bundle", "signer", "reason"), [
    pytest.param(verdict(workflow=".github/workflows/ci.yml", ref="refs/heads/main"),
                 ".github/workflows/release.yml",
                 "signed by workflow acme/web/.github/workflows/ci.yml@refs/heads/main, the "
                 "policy pins .github/workflows/release.yml", id="another-workflow"),
    pytest.param(verdict(ref="refs/heads/main"), ".github/workflows/release.yml@refs/tags/*",
                 "signed by workflow acme/web/.github/workflows/release.yml@refs/heads/main, "
                 "the policy pins .github/workflows/release.yml@refs/tags/*", id="another-ref"),
    pytest.param(verdict(repository="acme/fork"), None,
                 "built from acme/fork, but the policy's source is acme/web",
                 id="another-repository"),
    pytest.param(verdict(subjects=("sha256:" + "c" * 64,)), None,
                 "its statement is about sha256:cccccccccccc, not sha256:bbbbbbbbbbbb",
                 id="another-subject"),
    pytest.param(verdict(subjects=()), None,
                 "its statement is about no digest, not sha256:bbbbbbbbbbbb", id="no-subject"),
    pytest.param(verdict(issuer="https://gitlab.com"), None,
                 "its certificate was issued to https://gitlab.com, not to GitHub Actions",
                 id="another-issuer"),
    pytest.param(verdict(server="https://ghe.example"), None,
                 "built from https://ghe.example/acme/web, but the policy's source is "
                 "acme/web", id="another-server"),
    pytest.param(verdict(signer="org/shared/.github/workflows/build.yml@refs/heads/main"),
                 "org/shared/.github/workflows/build.yml@refs/tags/v2",
                 "signed by workflow org/shared/.github/workflows/build.yml@refs/heads/main, "
                 "the policy pins org/shared/.github/workflows/build.yml@refs/tags/v2",
                 id="reusable-at-another-ref"),
])
def test_a_verified_bundle_that_does_not_match_is_refused_with_the_reason(
        bundle: BundleVerdict, signer: str | None, reason: str) -> None:
    check = judged(bundle, signer=signer)
    assert check.state == "refused"
    assert check.reasons == (f"the attestation: {reason}",)
    assert check.problem(DIGEST, "acme/web") == (
        f"the attestation of sha256:bbbbbbbbbbbb is refused: the attestation: {reason}")


def test_a_reusable_workflow_of_another_repository_is_pinned_by_its_full_name() -> None:
    reusable = verdict(signer="org/shared/.github/workflows/build.yml@refs/tags/v2")
    assert judged(reusable, signer="org/shared/.github/workflows/build.yml@refs/tags/v2"
                  ).verified
    assert judged(reusable, signer="org/shared/.github/workflows/build.yml").verified
    assert judged(reusable, signer=".github/workflows/build.yml").state == "refused"


def test_the_commit_must_be_the_releases_when_one_is_known() -> None:
    check = judged(verdict(), expected_commit="f" * 40)
    assert check.reasons == ("the attestation: built from commit aaaaaaaaaaaa, but the "
                             "release points at ffffffffffff",)
    assert judged(verdict(), expected_commit=SHA).verified


def test_every_failing_bundle_is_named_and_a_verified_one_still_counts() -> None:
    failing = BundleVerdict(problem="the signature does not verify",
                            claimed_signer=f"{WEB}/acme/web/.github/workflows/release.yml@x")
    sbom = verdict(predicate="https://spdx.dev/Document/v2.3")
    check = judged(failing, sbom, verdict(repository="acme/fork"), verdict())
    assert check.verified
    assert check.reasons == (
        "attestation 1 of 4 (its certificate names https://github.com/acme/web/.github/"
        "workflows/release.yml@x) does not verify: the signature does not verify",
        "attestation 3 of 4: built from acme/fork, but the policy's source is acme/web",
    )
    refused = judged(failing, sbom)
    assert refused.state == "refused" and len(refused.reasons) == 1


def test_missing_and_unavailable() -> None:
    assert judged().state == "missing"
    assert judged().problem(DIGEST, "acme/web") == (
        "no attestation found for sha256:bbbbbbbbbbbb in acme/web")
    assert judged(verdict(predicate="https://spdx.dev/Document/v2.3")).state == "missing"
    loading = BundleVerdict(problem="no trusted Sigstore root is loaded: still loading",
                            unverifiable=True)
    check = judged(loading, loading)
    assert check.state == "unavailable"
    assert check.problem(DIGEST, "acme/web") == (
        "the attestations of sha256:bbbbbbbbbbbb cannot be verified: no trusted Sigstore "
        "root is loaded: still loading")
    assert judged(loading, verdict()).verified


def test_an_identity_without_a_signer_is_refused() -> None:
    bare = BundleVerdict(problem=None, predicate_type=SLSA_PROVENANCE_V1, subjects=(DIGEST,),
                         identity=SignerIdentity(GITHUB_ACTIONS_ISSUER, None,
                                                 f"{WEB}/acme/web", SHA))
    assert judged(bare).reasons == (
        "the attestation: signed by an unnamed workflow, not a workflow on https://github.com",)
    nothing = BundleVerdict(problem=None, predicate_type=SLSA_PROVENANCE_V1,
                            subjects=(DIGEST,))
    assert judged(nothing).reasons == (
        "the attestation: its certificate was issued to an unnamed issuer, not to GitHub "
        "Actions",)


@pytest.mark.parametrize(("text", "expected"), [
    (".github/workflows/release.yml", SignerWorkflow(".github/workflows/release.yml")),
    (".github/workflows/release.yaml@refs/tags/*",
     SignerWorkflow(".github/workflows/release.yaml", ref="refs/tags/*")),
    ("org/shared/.github/workflows/build.yml@" + "0" * 40,
     SignerWorkflow(".github/workflows/build.yml", "org/shared", "0" * 40)),
])
def test_signer_workflows_the_policy_may_write(text: str, expected: SignerWorkflow) -> None:
    assert parse_signer_workflow(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize(("text", "problem"), [
    ("release.yml", "expected a workflow file such as"),
    (".github/workflows/release.yml@v1", "'@v1' is not how GitHub names the ref"),
    (".github/workflows/../release.yml", "'.github/workflows/../release.yml' is not a path"),
    ("acme/web/.github/workflows/build.json", "expected a workflow file such as"),
    (".github/workflows/a b.yml", "expected a workflow file such as"),
])
def test_signer_workflows_the_policy_may_not_write(text: str, problem: str) -> None:
    found = parse_signer_workflow(text)
    assert isinstance(found, str) and found.startswith(problem), found


def test_a_ref_pattern_matches_any_run_of_characters() -> None:
    tags = pinned(".github/workflows/release.yml@refs/tags/v*")
    assert tags.matches("acme/web/.github/workflows/release.yml@refs/tags/v1.4.2", "acme/web")
    assert tags.matches("ACME/Web/.github/workflows/release.yml@refs/tags/v1/rc", "acme/web")
    assert not tags.matches("acme/web/.github/workflows/release.yml@refs/tags/1.4",
                            "acme/web")
    assert not tags.matches("acme/web/.github/workflows/Release.yml@refs/tags/v1", "acme/web")
    assert not tags.matches("not a signer", "acme/web")
