"""A digest's artifact attestations: listed by GitHub, verified, judged against the policy.

GitHub lists a digest's attestations under the repository whose workflow made them and under
its organisation ("List attestations", `GET /repos/{owner}/{repo}/attestations/{subject_digest}`
and `GET /orgs/{org}/attestations/{subject_digest}`, `predicate_type=provenance`): the
repository's are read first, the organisation's when it has none. Each bundle is verified
(`bot.attestations`, in a worker thread: X.509 chains and ECDSA; a bundle seen before costs
nothing) and the verdicts are judged against the service's `source` and `signer_workflow`
(`bot.domain.attestation.judge`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.attestations.trust import SigstoreTrust
from bot.domain.attestation import AttestationCheck, BundleVerdict, SignerWorkflow, judge
from bot.github.refusals import or_none
from bot.runtime.jobmemo import remembered
from bot.runtime.offload import run_in_thread
from bot.text import error_text

MAX_BUNDLES = 30  # GitHub's first page; one release's build attests once or twice
LOAD_WAIT = 30.0  # seconds a verification at start-up waits for the first trusted roots


async def attestation_bundles(gh: GitHubAPI, full_name: str, digest: str) -> list[Any]:
    """The bundles GitHub lists for the digest: the repository's, else the organisation's
    (asked once a job: a candidate and its provenance both need them)."""
    return await remembered(("attestations", full_name.lower(), digest),
                            lambda: _bundles(gh, full_name, digest))


async def _bundles(gh: GitHubAPI, full_name: str, digest: str) -> list[Any]:
    owner = full_name.split("/", 1)[0]
    digest_part = quote(digest, safe="")
    for url in (f"/repos/{full_name}/attestations/{digest_part}?predicate_type=provenance",
                f"/orgs/{owner}/attestations/{digest_part}?predicate_type=provenance"):
        data = await or_none(gh.getitem(url), 403, 404)
        items = (data or {}).get("attestations") if isinstance(data, dict) else None
        if items:
            return [item.get("bundle") if isinstance(item, dict) else None
                    for item in items[:MAX_BUNDLES]]
    return []


async def verify_bundles(trust: SigstoreTrust, bundles: list[Any]) -> list[BundleVerdict]:
    """Each bundle's verdict; a bundle verified before against the same roots is not
    verified again."""
    if not bundles:
        return []
    with contextlib.suppress(TimeoutError):  # then the verdicts say the roots are loading
        async with asyncio.timeout(LOAD_WAIT):
            await trust.wait_loaded()
    verdicts = []
    for bundle in bundles:
        known = trust.verifier.known(bundle)
        verdicts.append(known if known is not None
                        else await run_in_thread(trust.verifier.verify, bundle))
    return verdicts


async def check_attestation(gh: GitHubAPI, trust: SigstoreTrust, *, web_url: str,
                            source: str, digest: str, signer: SignerWorkflow | None,
                            expected_commit: str | None = None, lenient: bool = False
                            ) -> AttestationCheck:
    """The digest's attestations judged for a service of `source` pinned to `signer`.
    `lenient`: GitHub's failure to list them is an unavailable attestation (the gate fails
    closed with it) rather than an error of the job."""
    try:
        bundles = await attestation_bundles(gh, source, digest)
    except gidgethub.GitHubException as exc:
        if not lenient:
            raise
        return AttestationCheck("unavailable",
                                reasons=(f"GitHub did not list them: {error_text(exc)}",))
    verdicts = await verify_bundles(trust, bundles)
    return judge(verdicts, digest=digest, source=source, web_url=web_url, signer=signer,
                 expected_commit=expected_commit)
