"""Gathering a candidate's provenance: release, commit, CI run, attestation, source changes.

The artifact attestations are read first (`attestations.py`: listed by GitHub, verified,
judged against the policy): a verified one names the source commit, the workflow and the run.
Without one, the commit comes from the release tag or the image's OCI labels (already on the
candidate) and the run from the workflow runs of that commit; an attestation that does not
verify is shown with its reason and vouches for nothing. Every lookup is made once per
candidate; the compare view is added per environment, because each environment has its own
previous version.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.attestation import SignerWorkflow
from bot.domain.promotions.candidate import Candidate
from bot.domain.provenance import (
    Link,
    Provenance,
    compare_text,
    previous_git_tags,
)
from bot.github.refusals import or_none
from bot.promotion.opening.attestations import check_attestation
from bot.runtime.context import Context
from bot.text import short_digest

log = logging.getLogger(__name__)

MAX_RUNS = 10


async def gather_provenance(gh: GitHubAPI, ctx: Context, candidate: Candidate,
                            signer: SignerWorkflow | None, *,
                            previous_tag: str | None = None) -> Provenance:
    """`signer`: the service's `signer_workflow` in the policy."""
    source, web_url = candidate.source_repo, ctx.web_url
    attestation = await check_attestation(gh, ctx.attestations, web_url=web_url, source=source,
                                          digest=candidate.digest, signer=signer,
                                          expected_commit=candidate.source_sha)
    build = attestation.build
    sha = candidate.source_sha or (build.commit if build else None)
    commit_link = None
    if sha:
        origin = _commit_origin(candidate)
        commit_link = Link(f"{sha[:12]}{origin}", f"{web_url}/{source}/commit/{sha}")
    run = None
    if build is not None and build.run_url:
        workflow = build.workflow_path.rsplit("/", 1)[-1]
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
        attestation=attestation,
        # Attestations are listed by the repository whose workflow made them.
        attestations_url=f"{web_url}/{build.repository if build else source}/attestations",
    )
    if previous_tag:
        provenance = await with_compare(gh, provenance, candidate, previous_tag, web_url)
    return provenance


class LazyProvenance:
    """A candidate's provenance, gathered on first use and only once: a promotion that is
    already open or live never needs it, so an idle resync makes none of its requests."""

    def __init__(self, gh: GitHubAPI, ctx: Context, candidate: Candidate,
                 signer: SignerWorkflow | None) -> None:
        self._gh = gh
        self._ctx = ctx
        self._candidate = candidate
        self._signer = signer
        self._value: Provenance | None = None

    async def get(self) -> Provenance:
        if self._value is None:
            self._value = await gather_provenance(self._gh, self._ctx, self._candidate,
                                                  self._signer)
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


async def workflow_run(gh: GitHubAPI, full_name: str, sha: str) -> Link | None:
    """The CI run of the source commit: a successful one when there is one."""
    data = await or_none(
        gh.getitem(f"/repos/{full_name}/actions/runs?head_sha={sha}&per_page={MAX_RUNS}"), 403, 404)
    runs = (data or {}).get("workflow_runs") or []
    if not runs:
        return None
    run = next((r for r in runs if r.get("conclusion") == "success"), runs[0])
    return Link(f"{run.get('name') or 'workflow'} #{run.get('run_number', run.get('id'))}",
                run.get("html_url"))
