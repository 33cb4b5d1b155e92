"""9. Attestation verification: the CPU one bundle costs, by shape, and what a verdict kept
by bundle costs instead.

Bundles are signed by the emulator's Sigstore instances (the public-good shape: certificate
with an SCT, log entry with inclusion proof, checkpoint and signed entry timestamp, verified
by sigstore-python; GitHub's own shape: an RFC 3161 timestamp and no log entry, verified by
`bot/attestations/timestamped.py`), each one new so that nothing is cached, and verified one
after the other on this thread: the time is the CPU of one verification. The bot runs each in
a worker thread, once per bundle and generation of the trusted roots. The last row is the
event loop's longest pause while 20 bundles are verified the way the bot verifies them.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime

from bot.attestations.roots import load_roots_text
from bot.attestations.trust import SigstoreTrust
from bot.attestations.trustfile import TrustFile
from bot.attestations.verify import BundleVerifier
from bot.promotion.opening.attestations import verify_bundles
from conveyor_emulator.sigstore.authority import RunIdentity
from conveyor_emulator.sigstore.instance import GitHubSigstore, SigstoreInstance

from .report import Section, median, ms

DIGEST = "b" * 64


def _statement() -> dict[str, object]:
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "ghcr.io/acme/web", "digest": {"sha256": DIGEST}}],
            "predicateType": "https://slsa.dev/provenance/v1", "predicate": {}}


def _run() -> RunIdentity:
    return RunIdentity(server_url="https://github.com", repository="acme/web",
                       repository_id=1, owner_id=2, workflow_path=".github/workflows/release.yml",
                       ref="refs/tags/v1.4.2", sha="a" * 40, run_id=77)


def _per_bundle(verifier: BundleVerifier, instance: SigstoreInstance, count: int
                ) -> list[float]:
    at = datetime.now(UTC).replace(microsecond=0)
    bundles = [instance.sign(_statement(), _run(), at) for _ in range(count)]
    took = []
    for bundle in bundles:
        started = time.perf_counter()
        verdict = verifier.verify(bundle)
        took.append(time.perf_counter() - started)
        assert verdict.problem is None, verdict.problem
    return took


async def _loop_lag(trust: SigstoreTrust, instance: SigstoreInstance, count: int) -> float:
    at = datetime.now(UTC).replace(microsecond=0)
    bundles = [instance.sign(_statement(), _run(), at) for _ in range(count)]
    worst = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        while not done:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - before - 0.001)

    ticking = asyncio.create_task(ticker())
    await verify_bundles(trust, bundles)
    done = True
    await ticking
    return worst


async def run(quick: bool) -> Section:
    section = Section("9. Attestation verification: CPU per bundle")
    count = 10 if quick else 100
    sigstore = GitHubSigstore()
    roots = load_roots_text(sigstore.trusted_roots())
    verifier = BundleVerifier(lambda: (1, roots, None))
    for label, instance in (("public-good bundle (sigstore-python)", sigstore.public_good),
                            ("GitHub's own bundle (timestamp path)", sigstore.github)):
        took = _per_bundle(verifier, instance, count)
        section.add(f"verify one {label}", ms(median(took)),
                    note=f"median of {count}, slowest {ms(max(took))}")
        section.data[label] = {"median_s": median(took), "max_s": max(took), "count": count}
    bundle = sigstore.public_good.sign(_statement(), _run(), datetime.now(UTC))
    verifier.verify(bundle)
    started = time.perf_counter()
    for _ in range(count * 10):
        verifier.known(bundle)
    kept = (time.perf_counter() - started) / (count * 10)
    section.add("a bundle verified before (its verdict, kept by bundle digest)",
                f"{kept * 1e6:.0f} µs", note="hashing the bundle's JSON")
    section.data["known_s"] = kept
    trust = SigstoreTrust(file=TrustFile("benchmark", sigstore.trusted_roots()))
    lag = await _loop_lag(trust, sigstore.public_good, 20)
    section.add("event loop's longest pause while 20 bundles are verified in worker threads",
                ms(lag))
    section.data["loop_lag_s"] = lag
    section.data["bundle_bytes"] = len(json.dumps(bundle))
    return section
