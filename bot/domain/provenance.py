"""Where a candidate came from, and whether its attestation agrees with the policy."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    text: str
    url: str | None = None

    def markdown(self) -> str:
        return f"[{self.text}]({self.url})" if self.url else self.text


@dataclass(frozen=True)
class Provenance:
    package: Link | None = None
    release: Link | None = None
    source_commit: Link | None = None
    workflow_run: Link | None = None
    attestation: Link | None = None
    compare: Link | None = None
    # Set when an attestation names another repository or commit than the policy/release.
    attestation_problem: str | None = None
    attested: bool = False


def attestation_problem(
    *,
    attested_repo: str | None,
    attested_commit: str | None,
    expected_repo: str,
    expected_commit: str | None,
) -> str | None:
    """A mismatch between an attestation and what the policy and the release say, if any."""
    if attested_repo and attested_repo.lower() != expected_repo.lower():
        return (f"the attestation says the image was built from {attested_repo}, "
                f"but the policy's source is {expected_repo}")
    if attested_commit and expected_commit and attested_commit != expected_commit:
        return (f"the attestation names commit {attested_commit[:12]}, "
                f"but the release points at {expected_commit[:12]}")
    return None
