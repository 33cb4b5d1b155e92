"""Gathering a candidate's provenance: release, commit, CI run, attestation, source changes.

The artifact attestation is read first (the repository's, then the organisation's): when it
exists it names the source repository, the commit, the workflow and the run, and it is
cross-checked against the policy's `source` and the release's commit. Without one, the commit
comes from the release tag or the image's OCI labels (already on the candidate) and the run
from the workflow runs of that commit. Every lookup is made once per candidate; the compare
view is added per environment, because each environment has its own previous version.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.provenance import (
    AttestedBuild,
    Link,
    Provenance,
    attestation_problem,
    build_from_attestations,
    compare_text,
    previous_git_tags,
)
from bot.github.refusals import or_none
from bot.promotion.opening.candidates import Candidate
from bot.runtime.jobmemo import remembered
from bot.text import short_digest

log = logging.getLogger(__name__)

MAX_RUNS = 10


async def gather_provenance(gh: GitHubAPI, candidate: Candidate, web_url: str, *,
                            previous_tag: str | None = None) -> Provenance:
    source = candidate.source_repo
    build = await find_attestation(gh, source, candidate.digest)
    sha = candidate.source_sha or (build.commit if build else None)
    commit_link = None
    if sha:
        origin = _commit_origin(candidate)
        commit_link = Link(f"{sha[:12]}{origin}", f"{web_url}/{source}/commit/{sha}")
    problem = None
    attestation_link = None
    run = None
    if build is not None:
        problem = attestation_problem(attested_repo=build.repository,
                                      attested_commit=build.commit, expected_repo=source,
                                      expected_commit=candidate.source_sha)
        what = build.workflow_path or "workflow"
        if build.workflow_ref:
            what += f"@{build.workflow_ref}"
        attested_in = build.repository or source
        # Attestations are listed by the repository whose workflow made them.
        attestation_link = Link(f"SLSA provenance: {attested_in} {what}",
                                f"{web_url}/{attested_in}/attestations")
        if build.run_url:
            workflow = (build.workflow_path or "workflow").rsplit("/", 1)[-1]
            run = Link(f"{workflow} run {build.run_id or ''}".strip(), build.run_url)
    if run is None and sha:
        run = await workflow_run(gh, source, sha)
    release = None
    if candidate.release_tag:
        release = Link(candidate.release_tag, candidate.release_url or
                       f"{web_url}/{source}/releases/tag/{quote(candidate.release_tag, safe='')}")
    provenance = Provenance(
        package=Link(f"{candidate.image}@{short_digest(candidate.digest)}", candidate.package_url)
        if candidate.package_url else None,
        release=release,
        source_commit=commit_link,
        workflow_run=run,
        attestation=attestation_link,
        attestation_problem=problem,
        attested=build is not None,
    )
    if previous_tag:
        provenance = await with_compare(gh, provenance, candidate, previous_tag, web_url)
    return provenance


class LazyProvenance:
    """A candidate's provenance, gathered on first use and only once: a promotion that is
    already open or live never needs it, so an idle resync makes none of its requests."""

    def __init__(self, gh: GitHubAPI, candidate: Candidate, web_url: str) -> None:
        self._gh = gh
        self._candidate = candidate
        self._web_url = web_url
        self._value: Provenance | None = None

    async def get(self) -> Provenance:
        if self._value is None:
            self._value = await gather_provenance(self._gh, self._candidate, self._web_url)
        return self._value


def _commit_origin(candidate: Candidate) -> str:
    if not candidate.source_sha:
        return " (from the attestation)"
    if candidate.release_tag:
        return f" (tag {candidate.release_tag})"
    if candidate.trigger == "package":
        return " (OCI label)"
    return ""


async def with_compare(gh: GitHubAPI, provenance: Provenance, candidate: Candidate,
                       previous_tag: str | None, web_url: str) -> Provenance:
    """The provenance with the compare view from the previously live version to this one,
    and the number of commits between them when GitHub knows both ends."""
    if not previous_tag or previous_tag in (candidate.tag, candidate.version):
        return replace(provenance, compare=None)
    head = candidate.source_sha or candidate.release_tag
    if not head:
        return replace(provenance, compare=None)
    head_label = candidate.release_tag or head[:12]
    source = candidate.source_repo
    for base in previous_git_tags(previous_tag, candidate.release_tag, candidate.version):
        data = await or_none(gh.getitem(
            f"/repos/{source}/compare/{quote(base, safe='')}...{quote(head, safe='')}"), 404, 422)
        if data is None:
            continue
        ahead = data.get("total_commits", data.get("ahead_by"))
        behind = data.get("behind_by")
        link = Link(compare_text(base, head_label, _int(ahead), _int(behind)),
                    f"{web_url}/{source}/compare/{base}...{candidate.release_tag or head}")
        return replace(provenance, compare=link)
    return replace(provenance, compare=None)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


async def workflow_run(gh: GitHubAPI, repo: str, sha: str) -> Link | None:
    """The CI run of the source commit: a successful one when there is one."""
    data = await or_none(
        gh.getitem(f"/repos/{repo}/actions/runs?head_sha={sha}&per_page={MAX_RUNS}"), 403, 404)
    runs = (data or {}).get("workflow_runs") or []
    if not runs:
        return None
    run = next((r for r in runs if r.get("conclusion") == "success"), runs[0])
    return Link(f"{run.get('name') or 'workflow'} #{run.get('run_number', run.get('id'))}",
                run.get("html_url"))


async def find_attestation(gh: GitHubAPI, repo: str, digest: str) -> AttestedBuild | None:
    """The SLSA provenance of the digest: the repository's attestations, then the org's
    (asked once a job: a candidate and its provenance both need it)."""
    return await remembered(("attestation", repo.lower(), digest),
                            lambda: _find_attestation(gh, repo, digest))


async def _find_attestation(gh: GitHubAPI, repo: str, digest: str) -> AttestedBuild | None:
    owner = repo.split("/", 1)[0]
    digest_part = quote(digest, safe="")
    for url in (f"/repos/{repo}/attestations/{digest_part}",
                f"/orgs/{owner}/attestations/{digest_part}"):
        data = await or_none(gh.getitem(url), 403, 404)
        if data is None:
            continue
        build = build_from_attestations(data)
        if build is not None:
            return build
    return None
