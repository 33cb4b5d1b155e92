"""The public-good instance's logs: a Rekor-style transparency log (RFC 6962 Merkle tree,
inclusion proofs, checkpoints as signed notes, signed entry timestamps) and the certificate
transparency log whose signed certificate timestamps the certificate authority embeds."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class LogKey:
    """A log's ECDSA P-256 key and its id (the SHA-256 of its public key, as Sigstore names
    logs)."""

    def __init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.public_der = self._key.public_key().public_bytes(
            Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
        self.key_id = hashlib.sha256(self.public_der).digest()

    def sign(self, data: bytes) -> bytes:
        return self._key.sign(data, ec.ECDSA(hashes.SHA256()))

    def trusted_root_entry(self, base_url: str, since: datetime) -> dict[str, Any]:
        """The log as a `tlogs`/`ctlogs` item of a trusted root."""
        return {"baseUrl": base_url, "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": _b64(self.public_der),
                              "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                              "validFor": {"start": since.strftime("%Y-%m-%dT%H:%M:%SZ")}},
                "logId": {"keyId": _b64(self.key_id)}}


class CertificateTransparencyLog:
    """Signs RFC 6962 signed certificate timestamps for precertificates."""

    def __init__(self) -> None:
        self.key = LogKey()

    def sct_list(self, tbs_precertificate: bytes, issuer_key_id: bytes, at: datetime) -> bytes:
        """The TLS-encoded `SignedCertificateTimestampList` of one SCT (RFC 6962 3.2-3.3)."""
        millis = int(at.timestamp() * 1000)
        signed = (struct.pack("!BBQH", 0, 0, millis, 1) + issuer_key_id
                  + len(tbs_precertificate).to_bytes(3, "big") + tbs_precertificate
                  + struct.pack("!H", 0))
        signature = self.key.sign(signed)
        sct = (struct.pack("!B", 0) + self.key.key_id + struct.pack("!QH", millis, 0)
               + struct.pack("!BBH", 4, 3, len(signature)) + signature)  # sha256, ecdsa
        return struct.pack("!HH", len(sct) + 2, len(sct)) + sct


def _leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two smaller than `size` (RFC 6962 2.1)."""
    return 1 << ((size - 1).bit_length() - 1)


def _root(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node_hash(_root(leaves[:k]), _root(leaves[k:]))


def _path(index: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 2.1.1's audit path of leaf `index`, nearest the leaf first."""
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*_path(index, leaves[:k]), _root(leaves[k:])]
    return [*_path(index - k, leaves[k:]), _root(leaves[:k])]


@dataclass
class TransparencyLog:
    """A Rekor-style log of DSSE entries (kind `dsse`, version 0.0.1)."""

    origin: str
    base_url: str
    key: LogKey = field(default_factory=LogKey)
    _leaves: list[bytes] = field(default_factory=list)

    def append(self, body: dict[str, Any], integrated: datetime) -> dict[str, Any]:
        """Log `body` at `integrated`; its `tlogEntries` item, with an inclusion proof in the
        tree as it stands after it and that tree's checkpoint."""
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        index = len(self._leaves)
        self._leaves.append(_leaf_hash(canonical))
        size = len(self._leaves)
        root = _root(self._leaves)
        integrated_time = int(integrated.timestamp())
        # the signed entry timestamp: RFC 8785 JSON of these four (sorted keys, no spaces)
        promise = json.dumps({"body": _b64(canonical), "integratedTime": integrated_time,
                              "logID": self.key.key_id.hex(), "logIndex": index},
                             sort_keys=True, separators=(",", ":")).encode()
        return {
            "logIndex": str(index),
            "logId": {"keyId": _b64(self.key.key_id)},
            "kindVersion": {"kind": "dsse", "version": "0.0.1"},
            "integratedTime": str(integrated_time),
            "inclusionPromise": {"signedEntryTimestamp": _b64(self.key.sign(promise))},
            "inclusionProof": {
                "logIndex": str(index), "rootHash": _b64(root), "treeSize": str(size),
                "hashes": [_b64(h) for h in _path(index, self._leaves)],
                "checkpoint": {"envelope": self._checkpoint(size, root)},
            },
            "canonicalizedBody": _b64(canonical),
        }

    def _checkpoint(self, size: int, root: bytes) -> str:
        """A signed note (transparency-dev's checkpoint format): origin, size, root hash, then
        `— <origin> base64(key hint + signature)`."""
        note = f"{self.origin}\n{size}\n{_b64(root)}\n"
        signature = self.key.key_id[:4] + self.key.sign(note.encode())
        return f"{note}\n\u2014 {self.origin.split(' ')[0]} {_b64(signature)}\n"
