"""A Fulcio-style certificate authority: a root, an intermediate, and the short-lived signing
certificates it issues to a GitHub Actions workflow run, with the extensions Fulcio writes for
one (Sigstore's "OID information", `fulcio/docs/oid-info.md`: 1.3.6.1.4.1.57264.1.1-.6 as raw
strings, .8-.22 as DER UTF8Strings, their values from the run's OIDC token as its "Mapping OIDC
token claims to Fulcio OIDs" table says)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from conveyor_emulator.sigstore import der

GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
FULCIO = "1.3.6.1.4.1.57264.1"
# RFC 6962 3.3: the SCT list extension of a certificate
SCT_LIST_OID = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
# Fulcio's certificates are valid for ten minutes
SIGNING_CERT_LIFETIME = timedelta(minutes=10)
EPOCH = datetime(2020, 1, 1).astimezone()
FOREVER = datetime(2100, 1, 1).astimezone()


@dataclass(frozen=True)
class RunIdentity:
    """The claims of a GitHub Actions run's OIDC token that a signing certificate carries.
    `reusable_workflow` (`owner/repo/path@ref`, the token's `job_workflow_ref`) names the
    reusable workflow that signs, when the run's own workflow calls one."""

    server_url: str  # https://github.com
    repository: str  # owner/name
    repository_id: int
    owner_id: int
    workflow_path: str  # .github/workflows/release.yml
    ref: str  # refs/tags/v1.4.2
    sha: str
    run_id: int
    run_attempt: int = 1
    event: str = "push"
    visibility: str = "public"
    reusable_workflow: str | None = None
    issuer: str = GITHUB_ACTIONS_ISSUER

    @property
    def signer_uri(self) -> str:
        """Build Signer URI: server_url + job_workflow_ref."""
        if self.reusable_workflow is not None:
            return f"{self.server_url}/{self.reusable_workflow}"
        return self.build_config_uri

    @property
    def build_config_uri(self) -> str:
        """Build Config URI: server_url + workflow_ref (the run's own workflow)."""
        return f"{self.server_url}/{self.repository}/{self.workflow_path}@{self.ref}"

    @property
    def run_uri(self) -> str:
        return (f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
                f"/attempts/{self.run_attempt}")


def _key_id(key: ec.EllipticCurvePublicKey) -> bytes:
    return hashlib.sha256(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
                          ).digest()


def _name(organization: str, common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class CertificateAuthority:
    """A root and an intermediate that issues signing certificates; `sct` (a certificate
    transparency log's signer, for the public-good shape) embeds a signed certificate timestamp
    in each as Fulcio does."""

    def __init__(self, organization: str, *, not_before: datetime = EPOCH,
                 not_after: datetime = FOREVER,
                 sct: Callable[[bytes, bytes, datetime], bytes] | None = None) -> None:
        self.organization = organization
        self._root_key = ec.generate_private_key(ec.SECP384R1())
        self._key = ec.generate_private_key(ec.SECP384R1())
        root_name = _name(organization, f"{organization} root")
        self.root = self._ca_certificate(root_name, root_name, self._root_key.public_key(),
                                         self._root_key, not_before, not_after, path_length=1)
        self.intermediate = self._ca_certificate(
            _name(organization, f"{organization} intermediate"), root_name,
            self._key.public_key(), self._root_key, not_before, not_after, path_length=0)
        self._sct = sct

    @staticmethod
    def _ca_certificate(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey,
                        signer: ec.EllipticCurvePrivateKey, not_before: datetime,
                        not_after: datetime, *, path_length: int) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                signer.public_key()), critical=False)
        )
        return builder.sign(signer, hashes.SHA384())

    def issue(self, key: CertificatePublicKeyTypes, run: RunIdentity, at: datetime, *,
              lifetime: timedelta = SIGNING_CERT_LIFETIME,
              purposes: tuple[x509.ObjectIdentifier, ...] = (ExtendedKeyUsageOID.CODE_SIGNING,)
              ) -> x509.Certificate:
        """A signing certificate for `key`, issued to `run` at `at` (for other `purposes`: a
        certificate that must not sign)."""
        serial = x509.random_serial_number()
        builder = (
            x509.CertificateBuilder().subject_name(x509.Name([]))
            .issuer_name(self.intermediate.subject).public_key(key).serial_number(serial)
            .not_valid_before(at).not_valid_after(at + lifetime)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(list(purposes)), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                self._key.public_key()), critical=False)
            .add_extension(x509.SubjectAlternativeName(
                [x509.UniformResourceIdentifier(run.signer_uri)]), critical=True)
        )
        for number, value, raw in _fulcio_values(run):
            content = value.encode() if raw else der.tlv(0x0C, value.encode())
            builder = builder.add_extension(
                x509.UnrecognizedExtension(x509.ObjectIdentifier(f"{FULCIO}.{number}"), content),
                critical=False)
        if self._sct is None:
            return builder.sign(self._key, hashes.SHA384())
        # The SCT signs the certificate without its SCT list (a "precertificate"): issue it
        # once with a placeholder list to learn those bytes, then with the real one.
        placeholder = builder.add_extension(
            x509.UnrecognizedExtension(SCT_LIST_OID, der.octet_string(b"\x00\x00")),
            critical=False).sign(self._key, hashes.SHA384())
        sct_list = self._sct(placeholder.tbs_precertificate_bytes, _key_id(self._key.public_key()),
                             at)
        return builder.add_extension(
            x509.UnrecognizedExtension(SCT_LIST_OID, der.octet_string(sct_list)),
            critical=False).sign(self._key, hashes.SHA384())


def _fulcio_values(run: RunIdentity) -> list[tuple[int, str, bool]]:
    """(OID arc, value, written raw): the extensions of a GitHub Actions signing certificate."""
    server, repository = run.server_url, run.repository
    return [
        (1, run.issuer, True), (2, run.event, True), (3, run.sha, True),
        (4, run.workflow_path, True), (5, repository, True), (6, run.ref, True),
        (8, run.issuer, False), (9, run.signer_uri, False), (10, run.sha, False),
        (11, "github-hosted", False), (12, f"{server}/{repository}", False),
        (13, run.sha, False), (14, run.ref, False), (15, str(run.repository_id), False),
        (16, f"{server}/{repository.split('/')[0]}", False), (17, str(run.owner_id), False),
        (18, run.build_config_uri, False), (19, run.sha, False), (20, run.event, False),
        (21, run.run_uri, False), (22, run.visibility, False),
    ]
