"""Where a candidate came from, and whether its attestation agrees with the policy."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any


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


SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"


@dataclass(frozen=True)
class AttestedBuild:
    """What a SLSA v1 provenance statement says about the build of one image digest."""

    repository: str | None  # owner/name of the repository whose workflow built it
    commit: str | None  # resolvedDependencies[].digest.gitCommit
    workflow_path: str | None
    workflow_ref: str | None
    run_url: str | None  # runDetails.metadata.invocationId

    @property
    def run_id(self) -> str | None:
        if not self.run_url:
            return None
        parts = self.run_url.rstrip("/").split("/")
        if "runs" in parts and parts.index("runs") + 1 < len(parts):
            return parts[parts.index("runs") + 1]
        return None


def build_from_attestations(response: Any) -> AttestedBuild | None:
    """The first SLSA v1 provenance statement of a `GET .../attestations/{digest}` answer."""
    if not isinstance(response, dict):
        return None
    for item in response.get("attestations") or []:
        statement = _statement(item)
        if statement is None or statement.get("predicateType") != SLSA_PROVENANCE_V1:
            continue
        build = build_from_statement(statement)
        if build is not None:
            return build
    return None


def build_from_statement(statement: dict[str, Any]) -> AttestedBuild | None:
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict):
        return None
    definition = _mapping(predicate.get("buildDefinition"))
    workflow = _mapping(_mapping(definition.get("externalParameters")).get("workflow"))
    repository = repo_from_url(str(workflow.get("repository") or ""))
    commit = None
    for dependency in definition.get("resolvedDependencies") or []:
        dependency = _mapping(dependency)
        found = _mapping(dependency.get("digest")).get("gitCommit")
        if found:
            commit = str(found)
            if repository is None:
                uri = str(dependency.get("uri") or "").removeprefix("git+").split("@", 1)[0]
                repository = repo_from_url(uri)
            break
    metadata = _mapping(_mapping(predicate.get("runDetails")).get("metadata"))
    run_url = metadata.get("invocationId")
    return AttestedBuild(
        repository=repository, commit=commit,
        workflow_path=_optional(workflow.get("path")), workflow_ref=_optional(workflow.get("ref")),
        run_url=str(run_url) if run_url else None,
    )


def _statement(item: Any) -> dict[str, Any] | None:
    envelope = _mapping(_mapping(_mapping(item).get("bundle")).get("dsseEnvelope"))
    try:
        statement = json.loads(base64.b64decode(str(envelope.get("payload", "")), validate=True))
    except (ValueError, TypeError):
        return None
    return statement if isinstance(statement, dict) else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _optional(value: Any) -> str | None:
    return str(value) if value else None


def repo_from_url(url: str) -> str | None:
    """owner/name from `https://github.com/owner/name[/...]` (any host, `.git` dropped)."""
    if "://" not in url:
        return None
    parts = [part for part in url.split("://", 1)[1].split("/") if part]
    if len(parts) < 3:
        return None
    return f"{parts[1]}/{parts[2].removesuffix('.git')}"


def previous_git_tags(previous_tag: str, release_tag: str | None, version: str) -> list[str]:
    """Git tags the previously live image tag may have been released under, best first:
    spelled like the new release's tag (`1.4.1` beside `web-v1.4.2` → `web-v1.4.1`), then as
    written, then with a `v`."""
    bare = previous_tag.removeprefix("v")
    guesses = []
    if release_tag and release_tag.endswith(version):
        guesses.append(release_tag[: len(release_tag) - len(version)] + bare)
    guesses += [previous_tag, f"v{bare}"]
    return list(dict.fromkeys(guesses))


def compare_text(base: str, head: str, ahead_by: int | None, behind_by: int | None) -> str:
    """`v1.4.1...v1.4.2 (3 commits)`; a rollback reads `(2 commits back)`."""
    if ahead_by is None:
        return f"{base}...{head}"
    if ahead_by == 0 and behind_by:
        count = f"{behind_by} commit{'s' if behind_by != 1 else ''} back"
    else:
        count = f"{ahead_by} commit{'s' if ahead_by != 1 else ''}"
    return f"{base}...{head} ({count})"
