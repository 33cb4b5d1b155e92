"""Bundles verified against trusted roots, with test Sigstores of both shapes: the public-good
one (certificate with a signed certificate timestamp, transparency-log entry with inclusion
proof, checkpoint and signed entry timestamp: sigstore-python verifies it) and GitHub's own
(an RFC 3161 timestamp and no log entry: `bot/attestations/timestamped.py`)."""

from __future__ import annotations

import base64
import copy
from datetime import timedelta
from typing import Any

import pytest

from bot.attestations.verify import BundleVerifier, bundle_key
from bot.domain.attestation import GITHUB_ACTIONS_ISSUER, SignerIdentity
from conveyor_emulator.sigstore.instance import SigstoreInstance

from .sigstores import AT, COMMIT, DIGEST, roots_of, run, statement, verifier_for, with_payload

PUBLIC = SigstoreInstance.public_good("test-public-good")
GITHUB = SigstoreInstance.github("test-github")
VERIFIER = verifier_for(PUBLIC, GITHUB)
SHAPES = [pytest.param(PUBLIC, id="public-good"), pytest.param(GITHUB, id="github")]


@pytest.mark.parametrize("instance", SHAPES)
def test_a_bundle_verifies_and_says_who_signed_what(instance: SigstoreInstance) -> None:
    verdict = VERIFIER.verify(instance.sign(statement(), run(), AT))
    assert verdict.problem is None, verdict.problem
    assert verdict.root == instance.name
    assert verdict.subjects == (DIGEST,)
    assert verdict.predicate_type == "https://slsa.dev/provenance/v1"
    assert verdict.identity == SignerIdentity(
        issuer=GITHUB_ACTIONS_ISSUER,
        signer_uri="https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.4.2",
        source_repository_uri="https://github.com/acme/web", source_commit=COMMIT,
        source_ref="refs/tags/v1.4.2",
        run_uri="https://github.com/acme/web/actions/runs/77/attempts/1")


@pytest.mark.parametrize("instance", SHAPES)
def test_a_changed_statement_does_not_verify(instance: SigstoreInstance) -> None:
    forged = with_payload(instance.sign(statement(), run(), AT), statement("sha256:" + "c" * 64))
    assert VERIFIER.verify(forged).problem == "the signature does not verify"


@pytest.mark.parametrize("instance", SHAPES)
def test_a_certificate_expired_when_it_signed_does_not_verify(
        instance: SigstoreInstance) -> None:
    late = instance.sign(statement(), run(), AT, certified_at=AT - timedelta(minutes=11))
    problem = VERIFIER.verify(late).problem
    assert problem is not None
    assert problem.startswith(("its certificate was not valid when",
                               "its certificate does not chain to a trusted root")), problem


@pytest.mark.parametrize("instance", SHAPES)
def test_a_root_not_trusted_does_not_verify(instance: SigstoreInstance) -> None:
    stranger = SigstoreInstance(instance.name, transparency=instance.tlog is not None)
    verdict = VERIFIER.verify(stranger.sign(statement(), run(), AT))
    assert verdict.problem == (
        "its certificate was issued by a certificate authority no trusted root holds "
        f"(CN={instance.name} intermediate,O={instance.name})")
    assert verdict.claimed_signer == (
        "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.4.2")
    assert not verdict.unverifiable


def test_a_timestamp_from_an_authority_not_trusted_does_not_verify() -> None:
    bundle = GITHUB.sign(statement(), run(), AT)
    other = SigstoreInstance.github("test-github")
    assert other.tsa is not None
    signature = base64.b64decode(bundle["dsseEnvelope"]["signatures"][0]["sig"])
    stamped = copy.deepcopy(bundle)
    stamped["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": base64.b64encode(other.tsa.timestamp(signature, AT)).decode()}]
    assert VERIFIER.verify(stamped).problem == (
        "no timestamp was signed by a trusted timestamp authority for this signature")


def test_a_timestamp_of_another_signature_does_not_verify() -> None:
    bundle = GITHUB.sign(statement(), run(), AT)
    assert GITHUB.tsa is not None
    stamped = copy.deepcopy(bundle)
    stamped["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": base64.b64encode(GITHUB.tsa.timestamp(b"other", AT)).decode()}]
    assert VERIFIER.verify(stamped).problem == (
        "no timestamp was signed by a trusted timestamp authority for this signature")


def _material(bundle: dict[str, Any]) -> dict[str, Any]:
    material: dict[str, Any] = bundle["verificationMaterial"]
    return material


def test_a_timestamp_bundle_needs_a_timestamp_once_and_a_root_with_an_authority() -> None:
    bundle = GITHUB.sign(statement(), run(), AT)
    none = copy.deepcopy(bundle)
    _material(none)["timestampVerificationData"] = {}
    assert VERIFIER.verify(none).problem == (
        "it has neither a transparency-log entry nor a timestamp")
    twice = copy.deepcopy(bundle)
    stamps = _material(twice)["timestampVerificationData"]["rfc3161Timestamps"]
    stamps.append(stamps[0])
    assert VERIFIER.verify(twice).problem == "it has the same timestamp twice"
    garbled = copy.deepcopy(bundle)
    _material(garbled)["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": base64.b64encode(b"\x30\x03\x02\x01\x00").decode()}]
    assert VERIFIER.verify(garbled).problem == "a timestamp is not an RFC 3161 response"
    many = copy.deepcopy(bundle)
    _material(many)["timestampVerificationData"]["rfc3161Timestamps"] = [
        {"signedTimestamp": base64.b64encode(bytes([i])).decode()} for i in range(33)]
    assert VERIFIER.verify(many).problem == "it has 33 timestamps; at most 32 are read"
    root = GITHUB.trusted_root()
    root["timestampAuthorities"] = []
    without = verifier_for_roots([root])
    assert without.verify(bundle).problem == (
        "the trusted root that issued its certificate has no timestamp authority")


def verifier_for_roots(roots: list[dict[str, Any]]) -> BundleVerifier:
    import json

    from bot.attestations.roots import load_roots_text

    loaded = load_roots_text("\n".join(json.dumps(root) for root in roots))
    return BundleVerifier(lambda: (1, loaded, None))


def test_a_log_entry_that_does_not_prove_inclusion_does_not_verify() -> None:
    bundle = PUBLIC.sign(statement(), run(), AT)
    moved = copy.deepcopy(bundle)
    entry = _material(moved)["tlogEntries"][0]
    entry["inclusionProof"]["rootHash"] = base64.b64encode(b"\x00" * 32).decode()
    assert VERIFIER.verify(moved).problem == "its transparency-log entry does not verify"
    unpromised = copy.deepcopy(bundle)
    _material(unpromised)["tlogEntries"][0]["integratedTime"] = str(int(AT.timestamp()) + 60)
    assert VERIFIER.verify(unpromised).problem == "its transparency-log entry does not verify"


def test_a_log_entry_about_another_signature_does_not_verify() -> None:
    first = PUBLIC.sign(statement(), run(), AT)
    second = PUBLIC.sign(statement(), run(), AT)
    swapped = copy.deepcopy(second)
    _material(swapped)["tlogEntries"] = _material(first)["tlogEntries"]
    assert VERIFIER.verify(swapped).problem in (
        "its transparency-log entry is about another signature",
        "its transparency-log entry is about another statement")


def test_a_certificate_logged_by_no_trusted_ct_log_does_not_verify() -> None:
    root = PUBLIC.trusted_root()
    root["ctlogs"] = SigstoreInstance.public_good("x").trusted_root()["ctlogs"]
    verifier = verifier_for_roots([root])
    assert verifier.verify(PUBLIC.sign(statement(), run(), AT)).problem == (
        "its certificate's signed certificate timestamp does not verify")


def test_a_logged_bundle_needs_a_root_with_a_log() -> None:
    root = PUBLIC.trusted_root()
    root["tlogs"] = []
    verifier = verifier_for_roots([root])
    assert verifier.verify(PUBLIC.sign(statement(), run(), AT)).problem == (
        "it has a transparency-log entry, and the trusted root test-public-good has no "
        "transparency log")


def test_a_certificate_for_another_oidc_issuer_does_not_verify() -> None:
    verdict = VERIFIER.verify(GITHUB.sign(statement(), run(issuer="https://gitlab.com"), AT))
    assert verdict.problem == "its certificate was not issued to GitHub Actions"
    logged = VERIFIER.verify(PUBLIC.sign(statement(), run(issuer="https://gitlab.com"), AT))
    assert logged.problem == "its certificate was not issued to GitHub Actions"


@pytest.mark.parametrize(("bundle", "problem"), [
    (None, "GitHub listed it without a bundle"),
    ({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"},
     "it is not a Sigstore bundle"),
    ({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
      "verificationMaterial": {"tlogEntries": []},
      "dsseEnvelope": {"payload": "e30=", "payloadType": "x", "signatures": []}},
     "it is not a Sigstore bundle: verificationMaterial: Value error, Exactly one of"),
    ({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
      "verificationMaterial": {"tlogEntries": [], "publicKey": {"hint": "a key"}},
      "dsseEnvelope": {"payload": "e30=", "payloadType": "x", "signatures": []}},
     "it is not a Sigstore bundle: it holds no signing certificate"),
    ({"padding": "x" * 600_000}, "its bundle is larger than 512 KiB"),
])
def test_what_is_not_a_bundle_is_named(bundle: Any, problem: str) -> None:
    found = VERIFIER.verify(bundle).problem
    assert found is not None and found.startswith(problem), found


@pytest.mark.parametrize("instance", SHAPES)
def test_a_payload_that_is_not_an_in_toto_statement_is_refused(
        instance: SigstoreInstance) -> None:
    other_type = instance.sign(statement(), run(), AT, payload_type="text/plain")
    assert VERIFIER.verify(other_type).problem == (
        "its payload is text/plain, not an in-toto statement")
    a_list = instance.sign([1, 2], run(), AT)
    assert VERIFIER.verify(a_list).problem == "its payload is not an in-toto statement"


def test_statement_subjects_without_a_sha256_are_passed_over() -> None:
    odd = {**statement(), "subject": [{"digest": {"sha512": "ab"}}, "x", {"digest": "y"}],
           "predicateType": 3}
    verdict = VERIFIER.verify(GITHUB.sign(odd, run(), AT))
    assert (verdict.problem, verdict.subjects, verdict.predicate_type) == (None, (), None)


def test_an_older_bundle_with_a_certificate_chain_verifies() -> None:
    bundle = GITHUB.sign(statement(), run(), AT)
    material = _material(bundle)
    leaf = material.pop("certificate")
    material["x509CertificateChain"] = {"certificates": [leaf]}
    bundle["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2"
    assert VERIFIER.verify(bundle).problem is None


def test_a_bundle_without_the_tlog_entries_key_reads_as_one_without_entries() -> None:
    bundle = GITHUB.sign(statement(), run(), AT)
    del bundle["verificationMaterial"]["tlogEntries"]
    assert VERIFIER.verify(bundle).problem is None


def test_a_verdict_is_kept_by_bundle_until_the_roots_change() -> None:
    generation = [1]
    roots = roots_of(GITHUB)
    verifier = BundleVerifier(lambda: (generation[0], roots, None))
    bundle = GITHUB.sign(statement(), run(), AT)
    assert verifier.known(bundle) is None
    first = verifier.verify(bundle)
    assert verifier.known(bundle) is first
    assert verifier.verify(copy.deepcopy(bundle)) is first
    assert bundle_key(bundle) == bundle_key(copy.deepcopy(bundle))
    generation[0] = 2
    assert verifier.known(bundle) is None


def test_without_roots_nothing_verifies_and_the_verdict_says_why() -> None:
    verifier = BundleVerifier(lambda: (0, None, "the trusted roots are still being loaded"))
    verdict = verifier.verify(GITHUB.sign(statement(), run(), AT))
    assert verdict.unverifiable
    assert verdict.problem == (
        "no trusted Sigstore root is loaded: the trusted roots are still being loaded")
    assert verifier.known(GITHUB.sign(statement(), run(), AT)) is None
    partial = BundleVerifier(lambda: (1, roots_of(GITHUB), "public-good: unreachable"))
    logged = partial.verify(PUBLIC.sign(statement(), run(), AT))
    assert logged.unverifiable
    assert logged.problem == ("no loaded trusted root issued its certificate, and "
                              "public-good: unreachable")
