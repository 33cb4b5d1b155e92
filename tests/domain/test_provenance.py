"""Pure provenance: the attestation cell of the provenance table, tag guesses, compare text."""

from __future__ import annotations

import pytest

from bot.domain.attestation import AttestationCheck, VerifiedBuild
from bot.domain.provenance import Link, Provenance, compare_text, previous_git_tags

BUILD = VerifiedBuild(workflow="acme/web/.github/workflows/release.yml@refs/tags/v1.4.2",
                      repository="acme/web", commit="a" * 40,
                      run_url="https://github.com/acme/web/actions/runs/77/attempts/1",
                      root="public-good")


def test_the_attestation_cell_says_verified_with_workflow_repository_and_commit() -> None:
    provenance = Provenance(attestation=AttestationCheck("verified", BUILD),
                            attestations_url="https://github.com/acme/web/attestations")
    assert provenance.attestation_text() == (
        "✅ verified: workflow [acme/web/.github/workflows/release.yml@\u2060refs/tags/v1.4.2]"
        "(https://github.com/acme/web/attestations), repository acme/web, commit aaaaaaaaaaaa")
    assert provenance.attestation_problem is None
    assert (BUILD.workflow_path, BUILD.run_id) == (".github/workflows/release.yml", "77")


def test_the_attestation_cell_names_every_reason_or_says_not_attested() -> None:
    refused = Provenance(attestation=AttestationCheck(
        "refused", reasons=("the signature does not verify", "built from acme/api")))
    assert refused.attestation_text() == (
        "❌ refused: the signature does not verify; built from acme/api")
    assert refused.attestation_problem == "the signature does not verify; built from acme/api"
    unavailable = Provenance(attestation=AttestationCheck(
        "unavailable", reasons=("no trusted Sigstore root is loaded",)))
    assert unavailable.attestation_text() == (
        "❌ cannot be verified: no trusted Sigstore root is loaded")
    assert Provenance(attestation=AttestationCheck("missing")).attestation_text() == \
        "not attested"
    assert Provenance().attestation_text() == "not attested"
    assert Provenance().attestation_problem is None
    no_commit = VerifiedBuild("acme/web/x.yml@refs/heads/main", "acme/web", None, None, "r")
    assert no_commit.run_id is None and no_commit.workflow_path == "x.yml"


@pytest.mark.parametrize(("previous", "release_tag", "version", "expected"), [
    ("1.4.1", "v1.4.2", "1.4.2", ["v1.4.1", "1.4.1"]),
    ("1.4.1", "web-v1.4.2", "1.4.2", ["web-v1.4.1", "1.4.1", "v1.4.1"]),
    ("v1.4.1", "v1.4.2", "1.4.2", ["v1.4.1"]),
    ("1.4.1", "1.4.2", "1.4.2", ["1.4.1", "v1.4.1"]),
    ("1.4.1", None, "1.4.2", ["1.4.1", "v1.4.1"]),
    ("1.4.1", "release-2", "1.4.2", ["1.4.1", "v1.4.1"]),
])
def test_previous_git_tags(previous: str, release_tag: str | None, version: str,
                           expected: list[str]) -> None:
    assert previous_git_tags(previous, release_tag, version) == expected


@pytest.mark.parametrize(("ahead", "behind", "expected"), [
    (3, 0, "v1...v2 (3 commits)"),
    (1, 0, "v1...v2 (1 commit)"),
    (0, 2, "v1...v2 (2 commits back)"),
    (0, 1, "v1...v2 (1 commit back)"),
    (0, 0, "v1...v2 (0 commits)"),
    (2, None, "v1...v2 (2 commits)"),
    (None, None, "v1...v2"),
])
def test_compare_text(ahead: int | None, behind: int | None, expected: str) -> None:
    assert compare_text("v1", "v2", ahead, behind) == expected


def test_link_markdown() -> None:
    assert Link("v1.4.2", "https://x/r").markdown() == "[v1.4.2](https://x/r)"
    assert Link("v1.4.2").markdown() == "v1.4.2"


def test_source_from_labels_reads_githubs_all_labels_and_flat_keys() -> None:
    from bot.domain.promotions.candidate import source_from_labels

    nested = {"all_labels": {"org.opencontainers.image.source": "https://github.com/acme/web",
                             "org.opencontainers.image.revision": "a" * 40}}
    assert source_from_labels(nested) == ("acme/web", "a" * 40)
    flat = {"source": "https://github.com/acme/web.git", "revision": "b" * 40}
    assert source_from_labels(flat) == ("acme/web", "b" * 40)
    assert source_from_labels({}) == (None, None)
