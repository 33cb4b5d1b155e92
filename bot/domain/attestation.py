"""Artifact attestations judged against the policy.

A bundle that reaches this module was verified (or refused) by `bot/attestations/`: its
certificate chains to a trusted Sigstore root, its signing time lies within the certificate's
validity, the DSSE signature holds. What is left is the policy's question: is this statement
about this image, signed by GitHub Actions for the service's own repository and, where the
policy pins one, by its signer workflow? Every bundle that fails is named with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.text import short_digest

GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"

# `.github/workflows/release.yml`, `…@refs/tags/*`, `owner/repo/.github/workflows/build.yml@ref`
_NAME = r"[A-Za-z0-9_.-]+"
_SIGNER_RE = re.compile(
    rf"(?:(?P<repository>{_NAME}/{_NAME})/)?(?P<path>\.github/workflows/[^@\s]+\.ya?ml)"
    r"(?:@(?P<ref>\S+))?")
# What a certificate's Build Signer URI names after the server: owner/repo/path@ref
_SIGNER_URI_RE = re.compile(rf"(?P<repository>{_NAME}/{_NAME})/(?P<path>[^@]+\.ya?ml)@(?P<ref>.+)")
_SHA_RE = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class SignerWorkflow:
    """`services.<name>.signer_workflow`: the workflow whose certificate must sign. Without a
    repository it is the service's source; without a ref any ref; `*` in the ref matches any
    run of characters."""

    path: str
    repository: str | None = None
    ref: str | None = None

    def __str__(self) -> str:
        text = f"{self.repository}/{self.path}" if self.repository else self.path
        return f"{text}@{self.ref}" if self.ref else text

    def matches(self, signer: str, source: str) -> bool:
        """Whether a signer written `owner/repo/path@ref` is this workflow of `source`."""
        found = _SIGNER_URI_RE.fullmatch(signer)
        if found is None:
            return False
        repository = self.repository or source
        if found["repository"].lower() != repository.lower() or found["path"] != self.path:
            return False
        if self.ref is None:
            return True
        pattern = ".*".join(re.escape(part) for part in self.ref.split("*"))
        return re.fullmatch(pattern, found["ref"]) is not None


def parse_signer_workflow(text: str) -> SignerWorkflow | str:
    """The policy's `signer_workflow`, or why it cannot be one."""
    found = _SIGNER_RE.fullmatch(text.strip())
    if found is None:
        return ("expected a workflow file such as .github/workflows/release.yml, optionally "
                "@refs/tags/*, or owner/repo/.github/workflows/build.yml@ref for a reusable "
                "workflow of another repository")
    path, ref = found["path"], found["ref"]
    if any(part in ("", ".", "..") for part in path.split("/")):
        return f"'{path}' is not a path inside the repository"
    if ref is not None and not ref.startswith("refs/") and _SHA_RE.fullmatch(ref) is None:
        return (f"'@{ref}' is not how GitHub names the ref a workflow ran at; write the full "
                "ref, such as @refs/tags/* or @refs/heads/main, or a commit sha")
    return SignerWorkflow(path=path, repository=found["repository"], ref=ref)


@dataclass(frozen=True)
class SignerIdentity:
    """What a verified signing certificate says about the run that signed (Fulcio's extensions
    1.3.6.1.4.1.57264.1.8 and following)."""

    issuer: str | None
    signer_uri: str | None  # Build Signer URI: the workflow that signed, with its ref
    source_repository_uri: str | None
    source_commit: str | None
    source_ref: str | None = None
    run_uri: str | None = None


@dataclass(frozen=True)
class BundleVerdict:
    """One bundle after verification. `problem` is None when it verified; then `identity`,
    `predicate_type` and `subjects` come from the verified certificate and statement, and
    `root` names the trusted root that verified it. `claimed_signer` is what an unverified
    certificate says, to tell a refused bundle apart. `unverifiable`: no trusted root could be
    had to verify it with, which says nothing about the bundle."""

    problem: str | None
    identity: SignerIdentity | None = None
    root: str | None = None
    predicate_type: str | None = None
    subjects: tuple[str, ...] = ()  # "sha256:<hex>" of the statement's subjects
    claimed_signer: str | None = None
    unverifiable: bool = False


@dataclass(frozen=True)
class VerifiedBuild:
    """The verified provenance of an image: who built it, from what."""

    workflow: str  # owner/repo/.github/workflows/release.yml@refs/tags/v1.4.2
    repository: str  # owner/repo
    commit: str | None
    run_url: str | None
    root: str  # the trusted root that verified it

    @property
    def workflow_path(self) -> str:
        found = _SIGNER_URI_RE.fullmatch(self.workflow)
        return found["path"] if found else self.workflow

    @property
    def run_id(self) -> str | None:
        parts = (self.run_url or "").rstrip("/").split("/")
        if "runs" in parts and parts.index("runs") + 1 < len(parts):
            return parts[parts.index("runs") + 1]
        return None


AttestationState = Literal["verified", "refused", "missing", "unavailable"]


@dataclass(frozen=True)
class AttestationCheck:
    """The attestations of one digest judged against the policy: `verified` with the build,
    `refused` with every bundle's reason, `missing`, or `unavailable` (no trusted root could
    be had, or GitHub could not be asked) with the reason."""

    state: AttestationState
    build: VerifiedBuild | None = None
    reasons: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        return self.state == "verified"

    def problem(self, digest: str, source: str) -> str:
        """Why the attestation condition fails: one line naming every reason."""
        if self.state == "missing":
            return f"no attestation found for {short_digest(digest)} in {source}"
        if self.state == "unavailable":
            return (f"the attestations of {short_digest(digest)} cannot be verified: "
                    + "; ".join(self.reasons))
        return f"the attestation of {short_digest(digest)} is refused: " + "; ".join(self.reasons)


def _without_server(uri: str | None, web_url: str) -> str | None:
    """`owner/...` from `https://github.com/owner/...`; None for another server."""
    if uri is None:
        return None
    prefix = web_url.rstrip("/").lower() + "/"
    return uri[len(prefix):] if uri.lower().startswith(prefix) else None


def _named(index: int, total: int, verdict: BundleVerdict) -> str:
    """How a person tells the bundle apart: its place in GitHub's list and, for one that does
    not verify, the signer its certificate claims (a verified one's reason names it)."""
    name = f"attestation {index} of {total}" if total > 1 else "the attestation"
    if verdict.problem is not None and verdict.claimed_signer:
        name += f" (its certificate names {verdict.claimed_signer})"
    return name


def judge(verdicts: Sequence[BundleVerdict], *, digest: str, source: str, web_url: str,
          signer: SignerWorkflow | None, expected_commit: str | None = None
          ) -> AttestationCheck:
    """The first verified SLSA provenance bundle that is about `digest`, signed by GitHub
    Actions for `source` (and `signer`), and names `expected_commit` when one is known, with
    the reasons of the bundles that fail beside it; otherwise every bundle's reason. Verified
    bundles of other predicate types (an SBOM) are not about the build and are passed over."""
    if not verdicts:
        return AttestationCheck("missing")
    reasons: list[str] = []
    unverifiable: list[str] = []
    found: VerifiedBuild | None = None
    total = len(verdicts)
    for index, verdict in enumerate(verdicts, 1):
        if verdict.problem is not None:
            if verdict.unverifiable:
                unverifiable.append(verdict.problem)
            else:
                reasons.append(f"{_named(index, total, verdict)} does not verify: "
                               f"{verdict.problem}")
            continue
        if verdict.predicate_type != SLSA_PROVENANCE_V1:
            continue
        build, problem = _provenance(verdict, digest=digest, source=source, web_url=web_url,
                                     signer=signer, expected_commit=expected_commit)
        if build is None:
            reasons.append(f"{_named(index, total, verdict)}: {problem}")
        elif found is None:
            found = build
    if found is not None:
        return AttestationCheck("verified", found, tuple(reasons))
    if reasons:
        return AttestationCheck("refused", reasons=tuple(reasons))
    if unverifiable:
        return AttestationCheck("unavailable", reasons=tuple(dict.fromkeys(unverifiable)))
    return AttestationCheck("missing")


def _provenance(verdict: BundleVerdict, *, digest: str, source: str, web_url: str,
                signer: SignerWorkflow | None, expected_commit: str | None
                ) -> tuple[VerifiedBuild | None, str]:
    identity = verdict.identity or SignerIdentity(None, None, None, None)
    if digest not in verdict.subjects:
        about = ", ".join(short_digest(s) for s in verdict.subjects[:3]) or "no digest"
        return None, f"its statement is about {about}, not {short_digest(digest)}"
    if identity.issuer != GITHUB_ACTIONS_ISSUER:
        return None, (f"its certificate was issued to {identity.issuer or 'an unnamed issuer'}, "
                      "not to GitHub Actions")
    repository = _without_server(identity.source_repository_uri, web_url)
    if repository is None or repository.lower() != source.lower():
        built = repository or identity.source_repository_uri or "an unnamed repository"
        return None, f"built from {built}, but the policy's source is {source}"
    workflow = _without_server(identity.signer_uri, web_url)
    if workflow is None:
        return None, f"signed by {identity.signer_uri or 'an unnamed workflow'}, not a " \
                     f"workflow on {web_url}"
    if signer is not None and not signer.matches(workflow, source):
        return None, f"signed by workflow {workflow}, the policy pins {signer}"
    commit = identity.source_commit
    if expected_commit and commit and commit != expected_commit:
        return None, (f"built from commit {commit[:12]}, but the release points at "
                      f"{expected_commit[:12]}")
    return VerifiedBuild(workflow=workflow, repository=repository, commit=commit,
                         run_url=identity.run_uri, root=verdict.root or "a trusted root"), ""
