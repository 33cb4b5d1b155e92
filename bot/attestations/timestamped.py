"""Verification of a Sigstore bundle that carries RFC 3161 timestamps and no transparency-log
entry: the bundles GitHub's own Sigstore instance signs for private and internal repositories.

sigstore-python refuses a bundle without exactly one log entry (sigstore-python issue #1529),
so this one path is built on that library's parts (its bundle and trusted-root models, its
DSSE envelope, its certificate policy) with cryptography's X.509 path validation and
rfc3161-client's timestamp verifier. Bundles with a log entry never come here: sigstore-python
verifies those whole.

What it checks, in order, and refuses the bundle at the first that fails:
1. the bundle has no transparency-log entry, a DSSE envelope with exactly one signature, and
   1 to 32 RFC 3161 timestamps, none twice;
2. each timestamp against each timestamp authority of the trusted root: its token's signature
   and certificate chain up to the authority's root, the `timeStamping` extended key usage, the
   message imprint (the SHA-256 of the envelope's signature), a granted status, and a time
   within the authority's validity period; at least one timestamp must verify, and every
   verified time counts below;
3. the signing certificate, at every verified time: it chains to a certificate authority of the
   trusted root (path validation at that time, so every certificate of the chain was valid
   then), lies within its own validity (signing time between not-before and not-after), has
   the `digitalSignature` key usage and the `codeSigning` extended key usage, and satisfies the
   caller's certificate policy (the OIDC issuer);
4. the DSSE signature verifies with the certificate's public key (ECDSA P-256 with SHA-256
   over the envelope's pre-authentication encoding).

What it does not check: inclusion in a transparency log (there is none: nothing shows the
signature was published, which the public-good instance's log exists to show), signed
certificate timestamps (GitHub's instance has no certificate-transparency log), revocation
(Sigstore's certificates live ten minutes and have none). The statement inside the envelope
and the signer's identity are judged by `bot.domain.attestation`, as for every bundle.
"""

from __future__ import annotations

from datetime import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import (
    Criticality,
    ExtensionPolicy,
    PolicyBuilder,
    Store,
    VerificationError,
)
from rfc3161_client import TimeStampResponse, VerifierBuilder, decode_timestamp_response
from rfc3161_client import VerificationError as TimestampError
from sigstore.dsse import Envelope
from sigstore.errors import Error as SigstoreError
from sigstore.models import TrustedRoot
from sigstore.verify.policy import VerificationPolicy
from sigstore_models.bundle.v1 import Bundle as BundleMessage

MAX_TIMESTAMPS = 32


class Refused(Exception):
    """The bundle does not verify; the message says why, for a person."""


def verify_timestamped(bundle: BundleMessage, certificate: x509.Certificate,
                       root: TrustedRoot, policy: VerificationPolicy) -> tuple[str, bytes]:
    """The envelope's payload type and payload, once every check of the module's docstring
    holds; `Refused` otherwise."""
    material = bundle.verification_material
    if material.tlog_entries:
        raise Refused("it has a transparency-log entry, which this path does not verify")
    if bundle.dsse_envelope is None:
        raise Refused("it holds no DSSE envelope")
    try:
        envelope = Envelope(bundle.dsse_envelope)
    except SigstoreError as exc:
        raise Refused(f"its envelope is malformed: {exc}") from None
    signature = envelope.signature
    times = _verified_times(_timestamps(bundle), signature, root)
    authorities = Store(root.get_fulcio_certs())
    for moment in times:
        _check_certificate(certificate, authorities, moment)
    policy.verify(certificate)
    key = certificate.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise Refused("its certificate's key is not an ECDSA key")
    try:
        key.verify(signature, envelope.pae(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Refused("the signature does not verify") from None
    return bundle.dsse_envelope.payload_type, bundle.dsse_envelope.payload


def _timestamps(bundle: BundleMessage) -> list[TimeStampResponse]:
    data = bundle.verification_material.timestamp_verification_data
    signed = [item.signed_timestamp for item in (data.rfc3161_timestamps if data else [])]
    if not signed:
        raise Refused("it has neither a transparency-log entry nor a timestamp")
    if len(signed) > MAX_TIMESTAMPS:
        raise Refused(f"it has {len(signed)} timestamps; at most {MAX_TIMESTAMPS} are read")
    if len(set(signed)) != len(signed):
        raise Refused("it has the same timestamp twice")
    try:
        return [decode_timestamp_response(raw) for raw in signed]
    except ValueError:
        raise Refused("a timestamp is not an RFC 3161 response") from None


def _verified_times(responses: list[TimeStampResponse], signature: bytes,
                    root: TrustedRoot) -> list[datetime]:
    """The times of the responses a timestamp authority of `root` signed for `signature`."""
    authorities = root.get_timestamp_authorities()
    if not authorities:
        raise Refused("the trusted root that issued its certificate has no timestamp "
                      "authority")
    times: list[datetime] = []
    for response in responses:
        for authority in authorities:
            chain = authority.certificates(allow_expired=True)
            if len(chain) < 2:  # a signing certificate and a root at least
                continue
            builder = VerifierBuilder(tsa_certificate=chain[0], intermediates=chain[1:-1],
                                      roots=[chain[-1]])
            try:
                builder.build().verify_message(response, signature)
            except TimestampError:
                continue
            moment = response.tst_info.gen_time
            end = authority.validity_period_end
            if authority.validity_period_start <= moment and (end is None or moment < end):
                times.append(moment)
                break
    if not times:
        raise Refused("no timestamp was signed by a trusted timestamp authority for this "
                      "signature")
    return times


def _check_certificate(certificate: x509.Certificate, authorities: Store,
                       moment: datetime) -> None:
    start, end = certificate.not_valid_before_utc, certificate.not_valid_after_utc
    if not start <= moment <= end:
        raise Refused(f"its certificate was not valid when it was timestamped ({_when(moment)}; "
                      f"valid from {_when(start)} to {_when(end)})")
    # Fulcio's certificates are for code signing, not the client authentication a client
    # verifier asks for by default: the extended key usage is checked below instead.
    verifier = (
        PolicyBuilder().store(authorities).time(moment)
        .extension_policies(
            ca_policy=ExtensionPolicy.webpki_defaults_ca().may_be_present(
                x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None),
            ee_policy=ExtensionPolicy.webpki_defaults_ee().may_be_present(
                x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None))
        .build_client_verifier()
    )
    try:
        verifier.verify(certificate, [])
    except (VerificationError, x509.UnsupportedGeneralNameType) as exc:
        raise Refused(f"its certificate does not chain to a trusted root: {exc}") from None
    try:
        usage = certificate.extensions.get_extension_for_class(x509.KeyUsage).value
        purposes = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        raise Refused("its certificate lacks a key usage extension") from None
    if not usage.digital_signature or ExtendedKeyUsageOID.CODE_SIGNING not in purposes:
        raise Refused("its certificate is not for code signing")


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
