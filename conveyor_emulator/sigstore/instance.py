"""One Sigstore instance: its authorities and logs, the bundles it signs, its trusted root.

`public_good()` is shaped like Sigstore's public-good instance, which signs public
repositories' attestations: the certificate carries a signed certificate timestamp and the
bundle a transparency-log entry (inclusion proof, checkpoint, signed entry timestamp).
`github()` is shaped like GitHub's own, which signs private and internal repositories': the
bundle carries an RFC 3161 timestamp and no log entry. Both write Sigstore bundle v0.3 with a
DSSE envelope, as `actions/attest` does."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding

from conveyor_emulator.sigstore.authority import (
    EPOCH,
    CertificateAuthority,
    RunIdentity,
)
from conveyor_emulator.sigstore.logs import CertificateTransparencyLog, TransparencyLog
from conveyor_emulator.sigstore.timestamps import TimestampAuthority

BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json"
TRUSTED_ROOT = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"
IN_TOTO = "application/vnd.in-toto+json"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what an envelope's signature covers."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class SigstoreInstance:
    def __init__(self, name: str, *, transparency: bool) -> None:
        self.name = name
        self.ct_log = CertificateTransparencyLog() if transparency else None
        self.authority = CertificateAuthority(
            name, sct=self.ct_log.sct_list if self.ct_log else None)
        self.tlog = TransparencyLog(f"{name} rekor - 1", f"https://rekor.{name}.invalid"
                                    ) if transparency else None
        self.tsa = None if transparency else TimestampAuthority(name)

    @classmethod
    def public_good(cls, name: str = "emulated-public-good") -> SigstoreInstance:
        return cls(name, transparency=True)

    @classmethod
    def github(cls, name: str = "emulated-github") -> SigstoreInstance:
        return cls(name, transparency=False)

    def sign(self, statement: Any, run: RunIdentity, at: datetime, *,
             certified_at: datetime | None = None, payload_type: str = IN_TOTO
             ) -> dict[str, Any]:
        """A bundle of `statement` (JSON, or bytes as they are) signed at `at` by a key
        certified to `run` (at
        `certified_at`: a certificate that expired before the signature is a bundle that
        must not verify)."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = self.authority.issue(key.public_key(), run, certified_at or at)
        payload = (statement if isinstance(statement, bytes)
                   else json.dumps(statement, separators=(",", ":")).encode())
        signature = key.sign(pae(payload_type, payload), ec.ECDSA(hashes.SHA256()))
        envelope = {"payload": _b64(payload), "payloadType": payload_type,
                    "signatures": [{"sig": _b64(signature)}]}
        return self.bundle(certificate, envelope, at)

    def bundle(self, certificate: x509.Certificate, envelope: dict[str, Any], at: datetime
               ) -> dict[str, Any]:
        """A bundle of a signed `envelope`, with this instance's proof of when it was signed:
        a log entry, or a timestamp."""
        signature = base64.b64decode(envelope["signatures"][0]["sig"])
        material: dict[str, Any] = {
            "certificate": {"rawBytes": _b64(certificate.public_bytes(Encoding.DER))},
            "tlogEntries": [], "timestampVerificationData": {}}
        if self.tlog is not None:
            payload = base64.b64decode(envelope["payload"])
            pem = certificate.public_bytes(Encoding.PEM)
            body = {"apiVersion": "0.0.1", "kind": "dsse", "spec": {
                "envelopeHash": {"algorithm": "sha256", "value": hashlib.sha256(
                    json.dumps(envelope, sort_keys=True).encode()).hexdigest()},
                "payloadHash": {"algorithm": "sha256",
                                "value": hashlib.sha256(payload).hexdigest()},
                "signatures": [{"signature": _b64(signature), "verifier": _b64(pem)}]}}
            material["tlogEntries"] = [self.tlog.append(body, at)]
        if self.tsa is not None:
            material["timestampVerificationData"] = {"rfc3161Timestamps": [
                {"signedTimestamp": _b64(self.tsa.timestamp(signature, at))}]}
        return {"mediaType": BUNDLE_V03, "verificationMaterial": material,
                "dsseEnvelope": envelope}

    def trusted_root(self) -> dict[str, Any]:
        """This instance in the format of Sigstore's `trusted_root.json`."""
        since = {"start": _time(EPOCH)}
        authority = self.authority
        root: dict[str, Any] = {
            "mediaType": TRUSTED_ROOT, "tlogs": [], "ctlogs": [], "timestampAuthorities": [],
            "certificateAuthorities": [{
                "subject": {"organization": authority.organization,
                            "commonName": f"{authority.organization} intermediate"},
                "uri": f"https://fulcio.{self.name}.invalid",
                "certChain": {"certificates": [
                    {"rawBytes": _b64(c.public_bytes(Encoding.DER))}
                    for c in (authority.intermediate, authority.root)]},
                "validFor": since}],
        }
        if self.tlog is not None:
            root["tlogs"] = [self.tlog.key.trusted_root_entry(self.tlog.base_url, EPOCH)]
        if self.ct_log is not None:
            root["ctlogs"] = [self.ct_log.key.trusted_root_entry(
                f"https://ctfe.{self.name}.invalid", EPOCH)]
        if self.tsa is not None:
            root["timestampAuthorities"] = [{
                "subject": {"organization": self.name, "commonName": f"{self.name} TSA"},
                "uri": f"https://timestamp.{self.name}.invalid",
                "certChain": {"certificates": [
                    {"rawBytes": _b64(c.public_bytes(Encoding.DER))}
                    for c in (self.tsa.certificate, self.tsa.root)]},
                "validFor": since}]
        return root


class GitHubSigstore:
    """GitHub's two instances as GitHub uses them: the public-good one signs the attestations
    of public repositories, GitHub's own those of private and internal ones ("Using artifact
    attestations to establish provenance for builds", GitHub Docs)."""

    def __init__(self) -> None:
        self.public_good = SigstoreInstance.public_good()
        self.github = SigstoreInstance.github()

    def for_repository(self, private: bool) -> SigstoreInstance:
        return self.github if private else self.public_good

    def trusted_roots(self) -> str:
        """Both trusted roots, one JSON document a line (as `gh attestation trusted-root`
        prints them)."""
        return "".join(json.dumps(instance.trusted_root()) + "\n"
                       for instance in (self.public_good, self.github))
