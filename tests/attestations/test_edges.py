"""The certificates and envelopes a genuine Sigstore never writes, and what each check says
about them: an authority that copies a trusted one's name and key id, a certificate for
another purpose or with a key of another kind, envelopes with no signature or two, a
timestamp authority without a chain, extensions that are missing or malformed."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from sigstore_models.bundle.v1 import Bundle as BundleMessage

from bot.attestations.certificate import signer_identity
from bot.attestations.roots import load_roots_text
from bot.attestations.timestamped import Refused, verify_timestamped
from bot.attestations.verify import ISSUER_POLICY, BundleVerifier
from conveyor_emulator.sigstore.authority import EPOCH, FOREVER
from conveyor_emulator.sigstore.instance import IN_TOTO, SigstoreInstance, pae

from .sigstores import AT, run, statement, verifier_for

GITHUB = SigstoreInstance.github("edge-github")
PUBLIC = SigstoreInstance.public_good("edge-public-good")
VERIFIER = verifier_for(GITHUB, PUBLIC)


def envelope_of(key: Any, payload: bytes = b'{"subject": []}') -> dict[str, Any]:
    signature = (key.sign(pae(IN_TOTO, payload), ec.ECDSA(hashes.SHA256()))
                 if isinstance(key, ec.EllipticCurvePrivateKey) else b"sig")
    return {"payload": base64.b64encode(payload).decode(), "payloadType": IN_TOTO,
            "signatures": [{"sig": base64.b64encode(signature).decode()}]}


def test_an_authority_that_copies_a_trusted_ones_name_and_key_id_does_not_chain() -> None:
    trusted = GITHUB.authority.intermediate
    impostor_key = ec.generate_private_key(ec.SECP384R1())
    key_id = trusted.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(trusted.subject)
        .public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(AT).not_valid_after(AT + timedelta(minutes=10))
        .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False,
                                     False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier(key_id.digest, None, None), critical=False)
        .add_extension(x509.SubjectAlternativeName(
            [x509.UniformResourceIdentifier("https://github.com/acme/web/x.yml@refs/x")]),
            critical=True)
        .sign(impostor_key, hashes.SHA384())
    )
    bundle = GITHUB.bundle(leaf, envelope_of(leaf_key), AT)
    problem = VERIFIER.verify(bundle).problem
    assert problem is not None
    assert problem.startswith("its certificate does not chain to a trusted root: "), problem


def test_a_certificate_for_another_purpose_or_key_does_not_sign() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    client = GITHUB.authority.issue(key.public_key(), run(), AT,
                                    purposes=(ExtendedKeyUsageOID.CLIENT_AUTH,))
    assert VERIFIER.verify(GITHUB.bundle(client, envelope_of(key), AT)).problem == (
        "its certificate is not for code signing")
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = GITHUB.authority.issue(rsa_key.public_key(), run(), AT)
    assert VERIFIER.verify(GITHUB.bundle(other, envelope_of(rsa_key), AT)).problem == (
        "its certificate's key is not an ECDSA key")


def test_an_envelope_needs_exactly_one_signature() -> None:
    bundle = GITHUB.sign(statement(), run(), AT)
    twice = copy.deepcopy(bundle)
    twice["dsseEnvelope"]["signatures"].append(twice["dsseEnvelope"]["signatures"][0])
    problem = VERIFIER.verify(twice).problem
    assert problem is not None and problem.startswith("its envelope is malformed: "), problem


def test_a_payload_that_is_not_json_is_not_a_statement() -> None:
    bundle = GITHUB.sign(b"not json", run(), AT)
    assert VERIFIER.verify(bundle).problem == "its payload is not an in-toto statement"


def test_a_timestamp_authority_without_a_chain_vouches_for_nothing() -> None:
    root = GITHUB.trusted_root()
    root["timestampAuthorities"][0]["certChain"]["certificates"] = \
        root["timestampAuthorities"][0]["certChain"]["certificates"][:1]
    roots = load_roots_text(json.dumps(root))
    verifier = BundleVerifier(lambda: (1, roots, None))
    assert verifier.verify(GITHUB.sign(statement(), run(), AT)).problem == (
        "no timestamp was signed by a trusted timestamp authority for this signature")


def test_the_timestamp_path_takes_no_logged_bundle_and_no_message_signature() -> None:
    logged = PUBLIC.sign(statement(), run(), AT)
    certificate = x509.load_der_x509_certificate(
        base64.b64decode(logged["verificationMaterial"]["certificate"]["rawBytes"]))
    roots = load_roots_text(json.dumps(GITHUB.trusted_root()))
    message = BundleMessage.from_json(json.dumps(logged))
    with pytest.raises(Refused, match=r"^it has a transparency-log entry, which this path "):
        verify_timestamped(message, certificate, roots[0].root, ISSUER_POLICY)
    hashed = copy.deepcopy(GITHUB.sign(statement(), run(), AT))
    hashed.pop("dsseEnvelope")
    hashed["messageSignature"] = {
        "messageDigest": {"algorithm": "SHA2_256", "digest": "AA=="}, "signature": "AA=="}
    assert VERIFIER.verify(hashed).problem == "it holds no DSSE envelope"


def _certificate(extensions: list[x509.ExtensionType]) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "odd")])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
               .public_key(key.public_key()).serial_number(1)
               .not_valid_before(EPOCH).not_valid_after(FOREVER))
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    return builder.sign(key, hashes.SHA256())


def test_fulcio_extensions_missing_or_malformed_say_nothing() -> None:
    fulcio = "1.3.6.1.4.1.57264.1"
    odd = _certificate([
        x509.UnrecognizedExtension(x509.ObjectIdentifier(f"{fulcio}.1"),
                                   b"https://token.actions.githubusercontent.com"),
        x509.UnrecognizedExtension(x509.ObjectIdentifier(f"{fulcio}.12"), b"not DER"),
    ])
    identity = signer_identity(odd)
    assert identity.issuer == "https://token.actions.githubusercontent.com"  # the old OID
    assert (identity.signer_uri, identity.source_repository_uri, identity.source_commit,
            identity.run_uri) == (None, None, None, None)
    roots = load_roots_text(json.dumps(GITHUB.trusted_root()))
    assert not roots[0].issued(odd)
    nameless = _certificate([])
    assert signer_identity(nameless).issuer is None
    # an issuer named like the trusted authority, without key ids: the names decide
    named = x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(
        GITHUB.authority.intermediate.subject).public_key(
        ec.generate_private_key(ec.SECP256R1()).public_key()).serial_number(2).not_valid_before(
        datetime(2020, 1, 1, tzinfo=UTC)).not_valid_after(FOREVER).sign(
        ec.generate_private_key(ec.SECP256R1()), hashes.SHA256())
    assert roots[0].issued(named)
