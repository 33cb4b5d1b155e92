"""An RFC 3161 timestamp authority: a root and a signing certificate with the critical
`timeStamping` extended key usage (RFC 3161 2.3), and `TimeStampResp` messages whose token is a
CMS SignedData (RFC 5652) over a `TSTInfo`, signed with the ESS signing-certificate-v2 attribute
(RFC 5816)."""

from __future__ import annotations

import hashlib
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from conveyor_emulator.sigstore import der
from conveyor_emulator.sigstore.authority import EPOCH, FOREVER

SHA256 = "2.16.840.1.101.3.4.2.1"
ECDSA_SHA256 = "1.2.840.10045.4.3.2"
SIGNED_DATA = "1.2.840.113549.1.7.2"
TST_INFO = "1.2.840.113549.1.9.16.1.4"
CONTENT_TYPE = "1.2.840.113549.1.9.3"
MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
SIGNING_CERTIFICATE_V2 = "1.2.840.113549.1.9.16.2.47"
POLICY = "1.3.6.1.4.1.57264.2"  # the policy id Sigstore's timestamp authority uses


def _name(organization: str, common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class TimestampAuthority:
    def __init__(self, organization: str) -> None:
        root_key = ec.generate_private_key(ec.SECP384R1())
        self._key = ec.generate_private_key(ec.SECP256R1())
        root_name = _name(organization, f"{organization} timestamping root")
        self.root = (
            x509.CertificateBuilder().subject_name(root_name).issuer_name(root_name)
            .public_key(root_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(EPOCH).not_valid_after(FOREVER)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(root_key.public_key()),
                           critical=False)
            .sign(root_key, hashes.SHA384())
        )
        self.certificate = (
            x509.CertificateBuilder().subject_name(_name(organization, f"{organization} TSA"))
            .issuer_name(root_name).public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(EPOCH).not_valid_after(FOREVER)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                root_key.public_key()), critical=False)
            .sign(root_key, hashes.SHA384())
        )
        self._serial = 0

    def timestamp(self, message: bytes, at: datetime) -> bytes:
        """A granted `TimeStampResp` for `message` (its SHA-256 imprint) at `at`, DER."""
        self._serial += 1
        algorithm = der.sequence(der.oid(SHA256))
        tst_info = der.sequence(
            der.integer(1), der.oid(POLICY),
            der.sequence(algorithm, der.octet_string(hashlib.sha256(message).digest())),
            der.integer(self._serial), der.generalized_time(at))
        certificate = self.certificate.public_bytes(Encoding.DER)
        ess_cert_id = der.sequence(der.octet_string(hashlib.sha256(certificate).digest()))
        attributes = [
            der.sequence(der.oid(CONTENT_TYPE), der.set_of(der.oid(TST_INFO))),
            der.sequence(der.oid(MESSAGE_DIGEST),
                         der.set_of(der.octet_string(hashlib.sha256(tst_info).digest()))),
            der.sequence(der.oid(SIGNING_CERTIFICATE_V2),
                         der.set_of(der.sequence(der.sequence(ess_cert_id)))),
        ]
        # RFC 5652 5.4: the signature covers the attributes encoded as a SET OF
        signature = self._key.sign(der.set_of(*attributes), ec.ECDSA(hashes.SHA256()))
        signer_info = der.sequence(
            der.integer(1),
            der.sequence(self.certificate.issuer.public_bytes(),
                         der.integer(self.certificate.serial_number)),
            algorithm, der.implicit_set(0, *attributes), der.sequence(der.oid(ECDSA_SHA256)),
            der.octet_string(signature))
        signed_data = der.sequence(
            der.integer(3), der.set_of(algorithm),
            der.sequence(der.oid(TST_INFO), der.explicit(0, der.octet_string(tst_info))),
            der.implicit_set(0, certificate), der.set_of(signer_info))
        token = der.sequence(der.oid(SIGNED_DATA), der.explicit(0, signed_data))
        return der.sequence(der.sequence(der.integer(0)), token)
