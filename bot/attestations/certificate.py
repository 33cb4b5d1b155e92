"""What a signing certificate says about the run that signed: Fulcio's extensions, read as
Sigstore's "OID information" (`fulcio/docs/oid-info.md`) defines them."""

from __future__ import annotations

from cryptography import x509
from cryptography.hazmat import asn1

from bot.domain.attestation import SignerIdentity

_FULCIO = "1.3.6.1.4.1.57264.1"
ISSUER_V1 = x509.ObjectIdentifier(f"{_FULCIO}.1")  # a raw string (deprecated, still written)
ISSUER = x509.ObjectIdentifier(f"{_FULCIO}.8")
BUILD_SIGNER_URI = x509.ObjectIdentifier(f"{_FULCIO}.9")
SOURCE_REPOSITORY_URI = x509.ObjectIdentifier(f"{_FULCIO}.12")
SOURCE_REPOSITORY_DIGEST = x509.ObjectIdentifier(f"{_FULCIO}.13")
SOURCE_REPOSITORY_REF = x509.ObjectIdentifier(f"{_FULCIO}.14")
RUN_INVOCATION_URI = x509.ObjectIdentifier(f"{_FULCIO}.21")


def _extension(certificate: x509.Certificate, oid: x509.ObjectIdentifier) -> bytes | None:
    """The raw value of one of Fulcio's extensions (None when absent or unreadable)."""
    try:
        value = certificate.extensions.get_extension_for_oid(oid).value
    except (x509.ExtensionNotFound, ValueError):
        return None
    return value.value if isinstance(value, x509.UnrecognizedExtension) else None


def _value(certificate: x509.Certificate, oid: x509.ObjectIdentifier) -> str | None:
    """An extension of .8 and later: a DER UTF8String."""
    raw = _extension(certificate, oid)
    try:
        return asn1.decode_der(str, raw) if raw is not None else None
    except ValueError:
        return None


def _raw_value(certificate: x509.Certificate, oid: x509.ObjectIdentifier) -> str | None:
    """An extension of .1 to .6: the string itself."""
    raw = _extension(certificate, oid)
    return raw.decode("utf-8", "replace") if raw is not None else None


def signer_identity(certificate: x509.Certificate) -> SignerIdentity:
    return SignerIdentity(
        issuer=_value(certificate, ISSUER) or _raw_value(certificate, ISSUER_V1),
        signer_uri=_value(certificate, BUILD_SIGNER_URI) or subject_uri(certificate),
        source_repository_uri=_value(certificate, SOURCE_REPOSITORY_URI),
        source_commit=_value(certificate, SOURCE_REPOSITORY_DIGEST),
        source_ref=_value(certificate, SOURCE_REPOSITORY_REF),
        run_uri=_value(certificate, RUN_INVOCATION_URI),
    )


def subject_uri(certificate: x509.Certificate) -> str | None:
    """The identity a Fulcio certificate is issued to: its subject alternative name URI."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except (x509.ExtensionNotFound, ValueError):
        return None
    uris = names.value.get_values_for_type(x509.UniformResourceIdentifier)
    return uris[0] if uris else None
