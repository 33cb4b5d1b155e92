"""Gathering a candidate's provenance: release, commit, CI run, attestation, source changes."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from ..domain.provenance import Link, Provenance, attestation_problem
from .candidates import Candidate

log = logging.getLogger(__name__)


async def gather_provenance(gh: GitHubAPI, candidate: Candidate, web_url: str, *,
                            previous_tag: str | None = None) -> Provenance:
    source = candidate.source_repo
    commit_link = None
    if candidate.source_sha:
        commit_link = Link(candidate.source_sha[:12],
                           f"{web_url}/{source}/commit/{candidate.source_sha}")
    run = await _workflow_run(gh, source, candidate.source_sha) if candidate.source_sha else None
    attestation = await _attestation(gh, source, candidate.digest)
    problem = None
    attestation_link = None
    if attestation is not None:
        attested_repo, attested_commit, run_url = attestation
        problem = attestation_problem(attested_repo=attested_repo,
                                      attested_commit=attested_commit,
                                      expected_repo=source, expected_commit=candidate.source_sha)
        attestation_link = Link("SLSA provenance",
                                f"{web_url}/{source}/attestations")
        if run is None and run_url:
            run = Link("build run", run_url)
    compare = None
    if previous_tag and candidate.release_tag:
        previous_git_tag = _git_tag_like(previous_tag, candidate.release_tag, candidate.version)
        compare = Link(f"{previous_git_tag}...{candidate.release_tag}",
                       f"{web_url}/{source}/compare/{previous_git_tag}...{candidate.release_tag}")
    return Provenance(
        package=Link(f"{candidate.image}@{candidate.digest[:19]}", candidate.package_url)
        if candidate.package_url else None,
        release=Link(candidate.release_tag, candidate.release_url)
        if candidate.release_tag else None,
        source_commit=commit_link,
        workflow_run=run,
        attestation=attestation_link,
        compare=compare,
        attestation_problem=problem,
        attested=attestation is not None,
    )


def _git_tag_like(previous_tag: str, release_tag: str, version: str) -> str:
    """The previous version spelled like the new release's git tag (v1.4.1 beside v1.4.2)."""
    prefix = release_tag[: len(release_tag) - len(version)] if release_tag.endswith(version) else ""
    bare = previous_tag.removeprefix("v") if prefix.endswith("v") else previous_tag
    return f"{prefix}{bare}" if not previous_tag.startswith(prefix) else previous_tag


async def _workflow_run(gh: GitHubAPI, repo: str, sha: str) -> Link | None:
    try:
        data = await gh.getitem(f"/repos/{repo}/actions/runs?head_sha={sha}&per_page=5")
    except gidgethub.BadRequest:
        return None
    runs = data.get("workflow_runs") or []
    if not runs:
        return None
    run = runs[0]
    return Link(f"{run.get('name', 'workflow')} #{run.get('run_number', run.get('id'))}",
                run.get("html_url"))


async def _attestation(gh: GitHubAPI, repo: str, digest: str
                       ) -> tuple[str | None, str | None, str | None] | None:
    """(repository, commit, run URL) from the first SLSA provenance attestation of the digest."""
    try:
        data = await gh.getitem(f"/repos/{repo}/attestations/{quote(digest, safe='')}")
    except gidgethub.BadRequest as exc:
        if exc.status_code == 404:
            return None
        raise
    for item in data.get("attestations") or []:
        statement = _statement(item)
        if statement is None:
            continue
        predicate = statement.get("predicate") or {}
        build = predicate.get("buildDefinition") or {}
        workflow = (build.get("externalParameters") or {}).get("workflow") or {}
        attested_repo = _repo_from_url(str(workflow.get("repository") or ""))
        commit = None
        for dependency in build.get("resolvedDependencies") or []:
            commit = (dependency.get("digest") or {}).get("gitCommit") or commit
        run_url = ((predicate.get("runDetails") or {}).get("metadata") or {}).get("invocationId")
        return attested_repo, commit, run_url
    return None


def _statement(item: dict[str, Any]) -> dict[str, Any] | None:
    envelope = ((item.get("bundle") or {}).get("dsseEnvelope")) or {}
    try:
        statement = json.loads(base64.b64decode(envelope.get("payload", "")))
    except (ValueError, TypeError):
        return None
    return statement if isinstance(statement, dict) else None


def _repo_from_url(url: str) -> str | None:
    if not url:
        return None
    path = url.split("://", 1)[-1]
    parts = path.split("/")
    return "/".join(parts[1:3]) if len(parts) >= 3 else None
