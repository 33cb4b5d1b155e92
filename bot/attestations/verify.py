"""One attestation bundle verified against the trusted roots: a `BundleVerdict`.

The trusted root whose certificate authority issued the signing certificate verifies it. A
bundle with a transparency-log entry is verified whole by sigstore-python (the certificate
chain at the log's integrated time, its signed certificate timestamp, the inclusion proof and
the checkpoint, the signed entry timestamp, the signing time within the certificate's validity,
the DSSE signature, the log entry against the envelope); one with timestamps and no log entry
by `timestamped.py`. Both ask the certificate for GitHub Actions' OIDC issuer; the rest of the
signer's identity is the policy's to judge (`bot.domain.attestation.judge`).

Verdicts are kept by the SHA-256 of the bundle and the generation of the roots: a bundle is
verified once until the roots change.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

import cachetools
from cryptography import x509
from pydantic import ValidationError
from sigstore.errors import Error as SigstoreError
from sigstore.models import Bundle
from sigstore.verify.policy import AnyOf, OIDCIssuer, OIDCIssuerV2
from sigstore_models.bundle.v1 import Bundle as BundleMessage

from bot.attestations.certificate import signer_identity, subject_uri
from bot.attestations.roots import NamedRoot
from bot.attestations.timestamped import Refused, verify_timestamped
from bot.domain.attestation import GITHUB_ACTIONS_ISSUER, BundleVerdict

IN_TOTO = "application/vnd.in-toto+json"
MAX_BUNDLE_BYTES = 512 * 1024  # GitHub's bundles are a few kilobytes
# Fulcio writes the issuer twice (1.3.6.1.4.1.57264.1.8, and .1 as a raw string, deprecated):
# either names GitHub Actions
ISSUER_POLICY = AnyOf([OIDCIssuerV2(GITHUB_ACTIONS_ISSUER), OIDCIssuer(GITHUB_ACTIONS_ISSUER)])

# sigstore-python's refusals in words a person reads in a pull request
_PLAIN = (
    ("DSSE: invalid signature", "the signature does not verify"),
    ("failed to build timestamp certificate chain",
     "its certificate does not chain to a trusted root"),
    ("invalid signing cert: expired at time of signing",
     "its certificate was not valid when the log recorded it"),
    ("failed to verify SCT", "its certificate's signed certificate timestamp does not verify"),
    ("invalid log entry", "its transparency-log entry does not verify"),
    ("log entry payload hash does not match", "its transparency-log entry is about another "
     "statement"),
    ("log entry signatures do not match", "its transparency-log entry is about another "
     "signature"),
    ("0 of 2 policies succeeded", "its certificate was not issued to GitHub Actions"),
)


def bundle_key(bundle: Any) -> str:
    """The SHA-256 of a bundle's JSON, keys sorted: the same bundle, the same key."""
    return hashlib.sha256(json.dumps(bundle, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def plain(exc: BaseException) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}"[:200]
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    for start, said in _PLAIN:
        if text.startswith(start):
            return said
    return text[:200]


class BundleVerifier:
    """Verifies bundles against the roots `roots()` gives: a generation number that changes
    when they change, and the roots (None: none could be had, with the reason)."""

    def __init__(self, roots: Callable[[], tuple[int, list[NamedRoot] | None, str | None]],
                 *, cache_size: int = 4096) -> None:
        self._roots = roots
        self._verdicts: cachetools.LRUCache[tuple[int, str], BundleVerdict] = (
            cachetools.LRUCache(maxsize=cache_size))
        self._lock = threading.Lock()  # verification runs in worker threads

    def known(self, bundle: Any) -> BundleVerdict | None:
        """The verdict of a bundle verified before against the current roots."""
        generation, _, _ = self._roots()
        with self._lock:
            return self._verdicts.get((generation, bundle_key(bundle)))

    def verify(self, bundle: Any) -> BundleVerdict:
        generation, roots, problem = self._roots()
        key = (generation, bundle_key(bundle))
        with self._lock:
            known = self._verdicts.get(key)
        if known is not None:
            return known
        if roots is None:
            # not kept: the verdict says nothing about the bundle, only about the roots
            return BundleVerdict(problem=f"no trusted Sigstore root is loaded: {problem}",
                                 unverifiable=True)
        verdict = _verify(bundle, roots, problem)
        with self._lock:
            self._verdicts[key] = verdict
        return verdict


def _verify(bundle: Any, roots: list[NamedRoot], missing: str | None) -> BundleVerdict:
    if not isinstance(bundle, dict):
        return BundleVerdict(problem="GitHub listed it without a bundle")
    raw = json.dumps(bundle)
    if len(raw) > MAX_BUNDLE_BYTES:
        return BundleVerdict(problem=f"its bundle is larger than {MAX_BUNDLE_BYTES // 1024} KiB")
    material = bundle.get("verificationMaterial")
    if isinstance(material, dict) and "tlogEntries" not in material:
        # protobuf's JSON leaves an empty repeated field out
        bundle = {**bundle, "verificationMaterial": {**material, "tlogEntries": []}}
        raw = json.dumps(bundle)
    try:
        message = BundleMessage.from_json(raw)
        certificate = _signing_certificate(message)
    except (ValidationError, ValueError) as exc:
        return BundleVerdict(problem=f"it is not a Sigstore bundle: {plain(exc)}")
    claimed = subject_uri(certificate)
    issuers = [root for root in roots if root.issued(certificate)]
    if not issuers:
        if missing is not None:  # perhaps by the root that could not be had
            return BundleVerdict(problem=f"no loaded trusted root issued its certificate, and "
                                         f"{missing}", claimed_signer=claimed, unverifiable=True)
        issuer = certificate.issuer.rfc4514_string() or "an unnamed issuer"
        return BundleVerdict(problem=f"its certificate was issued by a certificate authority "
                                     f"no trusted root holds ({issuer})", claimed_signer=claimed)
    refusals: list[str] = []
    for root in issuers:
        try:
            payload_type, payload = _verified_payload(raw, message, certificate, root)
        except (Refused, SigstoreError, ValueError) as exc:
            refusals.append(plain(exc))
            continue
        return _verdict(payload_type, payload, certificate, root.name, claimed)
    return BundleVerdict(problem=refusals[0], claimed_signer=claimed)


def _signing_certificate(message: BundleMessage) -> x509.Certificate:
    material = message.verification_material
    if material.certificate is not None:
        return x509.load_der_x509_certificate(material.certificate.raw_bytes)
    chain = material.x509_certificate_chain
    if chain is not None and chain.certificates:
        return x509.load_der_x509_certificate(chain.certificates[0].raw_bytes)
    raise ValueError("it holds no signing certificate")


def _verified_payload(raw: str, message: BundleMessage, certificate: x509.Certificate,
                      root: NamedRoot) -> tuple[str, bytes]:
    if message.verification_material.tlog_entries:
        if root.verifier is None:
            raise Refused(f"it has a transparency-log entry, and the trusted root {root.name} "
                          "has no transparency log")
        return root.verifier.verify_dsse(Bundle.from_json(raw), ISSUER_POLICY)
    return verify_timestamped(message, certificate, root.root, ISSUER_POLICY)


def _verdict(payload_type: str, payload: bytes, certificate: x509.Certificate, root: str,
             claimed: str | None) -> BundleVerdict:
    if payload_type != IN_TOTO:
        return BundleVerdict(problem=f"its payload is {payload_type}, not an in-toto statement",
                             claimed_signer=claimed)
    try:
        statement = json.loads(payload)
    except ValueError:
        statement = None
    if not isinstance(statement, dict):
        return BundleVerdict(problem="its payload is not an in-toto statement",
                             claimed_signer=claimed)
    subjects: list[str] = []
    for subject in statement.get("subject") or []:
        digest = subject.get("digest") if isinstance(subject, dict) else None
        value = digest.get("sha256") if isinstance(digest, dict) else None
        if isinstance(value, str):
            subjects.append(f"sha256:{value.lower()}")
    predicate_type = statement.get("predicateType")
    return BundleVerdict(problem=None, identity=signer_identity(certificate), root=root,
                         predicate_type=predicate_type if isinstance(predicate_type, str)
                         else None, subjects=tuple(subjects), claimed_signer=claimed)

