"""Test Sigstores: the emulator's instances (their own root CA and intermediate, CT log,
transparency log and timestamp authority), a run of acme/web's release workflow, and the
statements they sign."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from bot.attestations.roots import NamedRoot, load_roots_text
from bot.attestations.verify import BundleVerifier
from conveyor_emulator.sigstore.authority import RunIdentity
from conveyor_emulator.sigstore.instance import SigstoreInstance

DIGEST = "sha256:" + "b" * 64
COMMIT = "a" * 40
AT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
SERVER = "https://github.com"


def run(repository: str = "acme/web", workflow: str = ".github/workflows/release.yml",
        ref: str = "refs/tags/v1.4.2", **overrides: Any) -> RunIdentity:
    values: dict[str, Any] = {
        "server_url": SERVER, "repository": repository, "repository_id": 11, "owner_id": 7,
        "workflow_path": workflow, "ref": ref, "sha": COMMIT, "run_id": 77}
    values.update(overrides)
    return RunIdentity(**values)


def statement(digest: str = DIGEST,
              predicate_type: str = "https://slsa.dev/provenance/v1") -> dict[str, Any]:
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "ghcr.io/acme/web", "digest": {"sha256": digest[7:]}}],
            "predicateType": predicate_type, "predicate": {"buildDefinition": {}}}


def with_payload(bundle: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The bundle with its statement replaced and its signature kept: forged."""
    envelope = {**bundle["dsseEnvelope"],
                "payload": base64.b64encode(json.dumps(payload).encode()).decode()}
    return {**bundle, "dsseEnvelope": envelope}


def roots_of(*instances: SigstoreInstance) -> list[NamedRoot]:
    return load_roots_text("".join(json.dumps(i.trusted_root()) + "\n" for i in instances))


def verifier_for(*instances: SigstoreInstance) -> BundleVerifier:
    roots = roots_of(*instances)
    return BundleVerifier(lambda: (1, roots, None))
