"""Counting the GitHub requests the emulator served, and comparing them with a minimum.

A minimum is a list of the requests the REST API needs for the job, each with the reason it
cannot be avoided (the same lists are explained in docs/performance.md). The comparison is a
multiset difference by (method, route template), so an extra request is named precisely.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from conveyor_emulator.faults.requestlog import RequestEntry

Need = tuple[str, str, str]  # method, route template, why it is unavoidable

TOKEN: Need = ("POST", "/app/installations/{installation_id}/access_tokens",
               "an installation access token (then cached for about an hour)")
REPOSITORIES: Need = ("GET", "/installation/repositories",
                      "the repositories of the installation (one page per 100)")


# GraphQL's budget, not REST's: in no REST minimum, but a round trip all the same
HOLDING_POLICY: Need = ("POST", "/graphql",
                        "which installed repositories hold .github/conveyor.yml (one query per "
                        "100 repositories)")


def policy_reads(deployment_repositories: int = 1) -> list[Need]:
    """The policy of each deployment repository. Which installed repositories hold one is
    asked of GraphQL (one query per 100 repositories, GraphQL's budget), not of REST, which
    can only ask them one by one."""
    return [("GET", "/repos/{owner}/{repo}/contents/{path}",
             ".github/conveyor.yml of each deployment repository (any repository that holds "
             "one)")] * deployment_repositories


RELEASE_TO_PR: list[Need] = [
    ("GET", "/repos/{owner}/{repo}/commits/{ref}",
     "the commit of the git tag (Conveyor-Source trailer, provenance); the payload's "
     "target_commitish is usually a branch"),
    ("GET", "/repos/{owner}/{repo}/attestations/{subject_digest}",
     "the artifact attestations of the digest, verified (the verified one names the CI run)"),
    ("GET", "/repos/{owner}/{repo}/pulls",
     "open pull requests: an open one for the branch is adopted, older ones superseded"),
    ("GET", "/repos/{owner}/{repo}/pulls",
     "a pull request of the branch closed without merging is not reopened (`head=` filter; "
     "the open list cannot tell)"),
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}",
     "commits between the live and the new version, for the body"),
    ("GET", "/repos/{owner}/{repo}/git/ref/{ref}", "the default branch's head to branch from"),
    ("POST", "/repos/{owner}/{repo}/git/refs", "the promotion branch"),
    ("PUT", "/repos/{owner}/{repo}/contents/{path}", "the one commit that changes the file "
     "(GitHub signs it: no receipt `conveyor/commit` is needed)"),
    ("POST", "/repos/{owner}/{repo}/pulls", "the pull request"),
]
# A bot that has not read the default branch's files yet: the environment's file is read
# through the tree with what its Kustomize build reads (rendering on), in one archive.
COLD_FILES: list[Need] = [
    ("GET", "/repos/{owner}/{repo}/git/trees/{tree_sha}",
     "the default branch's tree at its head: the file's blob, whether it is part of a "
     "Kustomize overlay and what that overlay's build reads"),
    ("GET", "/repos/{owner}/{repo}/tarball/{ref}",
     "the file and every file its build reads, in one archive (blobs are kept by sha: a warm "
     "bot reads only the changed ones)"),
]
AFTER_PR: list[Need] = [
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
     "labels `conveyor` and `env/<env>` (the create endpoint takes none)"),
    ("POST", "/repos/{owner}/{repo}/check-runs",
     "the gate, before the auto-merge: GitHub refuses to merge a PR without a required check"),
    ("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
     "auto_merge of the ungated entry environment"),
]

# The demo's production does not require an attestation: the gate reads none (where one is
# required: the digest's attestations, 1 request, 2 while the repository has none).
GATE_READS: list[Need] = [
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files",
     "the files the pull request changes (file texts at its head and base are read once: "
     "a commit never changes)"),
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}",
     "what merging the PR makes now: the default branch's commit, how far the head is behind "
     "it and their merge base (the PR's `base.sha` stays where the branch was)"),
    ("GET", "/repos/{owner}/{repo}/commits",
     "the upstream file's history (`path=`): the commit that set the digest, the one that "
     "replaced it"),
    ("GET", "/repos/{owner}/{repo}/commits",
     "default-branch commits from there: a report may be on any later one"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses",
     "per such commit: its commit statuses, every page (argocd/web-staging)"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs",
     "per such commit: its check runs of the deployed_context name"),
    ("GET", "/repos/{owner}/{repo}/deployments", "per such commit: its deployments (`sha=`)"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "the approvals"),
]
GATE_AFTER_REVIEW: list[Need] = [
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}",
     "the pull request as it is now (labels, body, head): the event's copy may be stale"),
    *GATE_READS,
    ("GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}",
     "is the reviewer in the approvers' team (then cached two minutes)"),
    ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}",
     "the verdict changed: update the gate check run"),
]
GATE_RERUN: list[Need] = [
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}",
     "the pull request (a check_run event names only its number and shas)"),
    *GATE_READS,
]


@dataclass(frozen=True)
class Tally:
    """REST requests (GitHub's 5,000 an hour), and GraphQL queries apart: GraphQL has its own
    budget of points (5,000 an hour for an installation; each query here costs 1)."""

    total: int
    not_modified: int
    requests: tuple[tuple[str, str, int], ...]  # (method, template, status) in order
    graphql: int = 0

    @property
    def full(self) -> int:
        """Requests answered with a body (everything but 304): these count against the
        primary rate limit."""
        return self.total - self.not_modified

    def split(self) -> str:
        rest = f"{self.total} ({self.full} + {self.not_modified}×304)"
        if not self.graphql:
            return rest
        points = "1 GraphQL point" if self.graphql == 1 else f"{self.graphql} GraphQL points"
        return f"{rest} + {points} (a budget of its own)"

    def as_dict(self) -> dict[str, object]:
        return {"total": self.total, "not_304": self.full, "status_304": self.not_modified,
                "graphql_points": self.graphql,
                "requests": [f"{m} {p} {s}" for m, p, s in self.requests]}


def tally(entries: Sequence[RequestEntry]) -> Tally:
    rest = [e for e in entries if e.resource == "core"]
    return Tally(
        total=len(rest),
        not_modified=sum(1 for e in rest if e.was_304),
        requests=tuple((e.method, e.path, e.status) for e in rest),
        graphql=len(entries) - len(rest),
    )


@dataclass(frozen=True)
class Comparison:
    extra: Counter[tuple[str, str]]
    missing: Counter[tuple[str, str]]

    def describe(self) -> str:
        parts = [f"+{n} {m} {p}" for (m, p), n in sorted(self.extra.items())]
        parts += [f"-{n} {m} {p}" for (m, p), n in sorted(self.missing.items())]
        return "; ".join(parts) if parts else "exactly the minimum"


def compare(measured: Tally, minimum: Sequence[Need]) -> Comparison:
    actual = Counter((m, p) for m, p, _ in measured.requests)
    needed = Counter((m, p) for m, p, _ in minimum)
    return Comparison(actual - needed, needed - actual)
