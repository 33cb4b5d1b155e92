"""The emulator's data model: accounts, repositories and everything GitHub keeps about them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from conveyor_emulator.store.gitstore import GitStore

JSON = dict[str, Any]


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


@dataclass
class Account:
    id: int
    login: str
    type: str  # User | Organization | Bot
    name: str | None = None
    email: str | None = None
    created_at: datetime | None = None

    @property
    def node_id(self) -> str:
        prefix = {"Organization": "O_", "Bot": "BOT_"}.get(self.type, "U_")
        return f"{prefix}kgDO{self.id:08d}"


@dataclass
class Team:
    id: int
    org: str
    slug: str
    members: set[str]


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str = ""
    default: bool = False


@dataclass
class Reaction:
    id: int
    user: str
    content: str
    created_at: datetime


@dataclass
class Comment:
    id: int
    repo: str
    issue_number: int
    user: str
    body: str
    created_at: datetime
    updated_at: datetime
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Review:
    id: int
    user: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    body: str
    commit_id: str
    submitted_at: datetime


@dataclass
class Pull:
    head_ref: str
    base_ref: str
    head_sha: str
    base_sha: str
    draft: bool = False
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    reviews: list[Review] = field(default_factory=list)


@dataclass
class Issue:
    id: int
    number: int
    title: str
    body: str | None
    user: str
    created_at: datetime
    updated_at: datetime
    state: str = "open"
    state_reason: str | None = None
    closed_at: datetime | None = None
    closed_by: str | None = None
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    locked: bool = False
    comment_ids: list[int] = field(default_factory=list)
    pull: Pull | None = None


@dataclass
class CheckSuite:
    id: int
    head_sha: str
    head_branch: str | None
    app_id: int
    created_at: datetime
    updated_at: datetime


@dataclass
class CheckRun:
    id: int
    repo: str
    name: str
    head_sha: str
    suite_id: int
    app_id: int
    status: str
    conclusion: str | None
    started_at: datetime
    completed_at: datetime | None
    output: JSON
    annotations: list[JSON]
    details_url: str | None
    external_id: str | None
    actions: list[JSON]


@dataclass
class RequiredCheck:
    """A status check a branch requires, as branch protection's `checks[]` ({context, app_id})
    and a ruleset's `required_status_checks[]` ({context, integration_id}) describe it:
    `app_id` None means any source may satisfy it ("Get a branch" shows `app_id: null`)."""

    context: str
    app_id: int | None = None


# A `pull_request` rule's parameters: the five GitHub's description requires
# (`repository-rule-pull-request` in github-rest.trimmed.json), off and 0 unless a test sets
# them, and `allowed_merge_methods`, which it lists without requiring and GitHub answers.
PULL_REQUEST_RULE: JSON = {
    "allowed_merge_methods": ["merge", "squash", "rebase"],
    "dismiss_stale_reviews_on_push": False,
    "require_code_owner_review": False,
    "require_last_push_approval": False,
    "required_approving_review_count": 0,
    "required_review_thread_resolution": False,
}


@dataclass
class Ruleset:
    """A repository ruleset on the default branch: a `required_status_checks` rule (when it
    names checks), with its `strict_required_status_checks_policy`, and a `pull_request` rule
    with these parameters (None: none). Read by "Get rules for a branch"; a merge is refused
    only for its required checks (reviews, and being up to date, are not enforced here)."""

    id: int
    name: str
    checks: list[RequiredCheck]
    strict: bool = False
    pull_request: JSON | None = None


@dataclass
class Status:
    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: datetime
    updated_at: datetime


@dataclass
class DeploymentStatus:
    id: int
    state: str
    creator: str
    description: str
    environment: str
    log_url: str
    environment_url: str
    created_at: datetime


@dataclass
class Deployment:
    id: int
    sha: str
    ref: str
    task: str
    environment: str
    original_environment: str
    payload: Any
    description: str | None
    creator: str
    created_at: datetime
    updated_at: datetime
    transient_environment: bool
    production_environment: bool
    statuses: list[DeploymentStatus] = field(default_factory=list)


@dataclass
class Release:
    id: int
    tag_name: str
    target_commitish: str
    name: str | None
    body: str | None
    draft: bool
    prerelease: bool
    author: str
    created_at: datetime
    published_at: datetime | None


@dataclass
class WorkflowRun:
    id: int
    repo: str
    name: str
    head_sha: str
    head_branch: str | None
    path: str
    event: str
    status: str
    conclusion: str | None
    run_number: int
    created_at: datetime
    actor: str


@dataclass
class PackageVersion:
    id: int
    name: str  # the digest
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    author: str


@dataclass
class Package:
    id: int
    name: str
    owner: str
    source_repo: str | None
    created_at: datetime
    versions: list[PackageVersion] = field(default_factory=list)


@dataclass
class Attestation:
    id: int
    repo: str
    digest: str
    bundle: JSON
    predicate_type: str = "https://slsa.dev/provenance/v1"


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    private: bool
    default_branch: str
    created_at: datetime
    store: GitStore = field(default_factory=GitStore)
    refs: dict[str, str] = field(default_factory=dict)
    pushed_at: datetime | None = None
    permissions: dict[str, str] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    check_runs: list[CheckRun] = field(default_factory=list)
    check_suites: list[CheckSuite] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)
    deployments: list[Deployment] = field(default_factory=list)
    releases: list[Release] = field(default_factory=list)
    workflow_runs: list[WorkflowRun] = field(default_factory=list)
    attestations: list[Attestation] = field(default_factory=list)
    required_checks: list[RequiredCheck] = field(default_factory=list)
    rulesets: list[Ruleset] = field(default_factory=list)
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def branch_sha(self, branch: str) -> str | None:
        return self.refs.get("refs/heads/" + branch)

    def resolve(self, ref: str) -> str | None:
        """A commit sha for a sha (or unique prefix), branch, tag, or fully qualified ref."""
        for candidate in (ref, "refs/heads/" + ref, "refs/tags/" + ref):
            if candidate in self.refs:
                return self.peel(self.refs[candidate])
        if all(c in "0123456789abcdef" for c in ref.lower()):
            sha = self.store.resolve_prefix(ref.lower())
            if sha and self.store.commit(sha):
                return sha
        return None

    def peel(self, sha: str) -> str:
        tag = self.store.tag(sha)
        while tag is not None:
            sha = tag.object
            tag = self.store.tag(sha)
        return sha


@dataclass
class Installation:
    id: int
    account: str
    repo_ids: set[int] | None  # None: all repositories of the account
    permissions: dict[str, str]
    events: list[str]
    created_at: datetime


@dataclass
class Token:
    value: str
    installation_id: int
    repo_ids: set[int] | None
    permissions: dict[str, str]
    expires_at: float  # wall-clock seconds


@dataclass
class ManifestApp:
    id: int
    slug: str
    name: str
    client_id: str
    client_secret: str
    webhook_secret: str
    pem: str
    public_pem: str
    owner: str
    manifest: JSON


@dataclass(frozen=True)
class ArchiveLink:
    """A repository archive download handed out by `GET /repos/{r}/tarball/{ref}`."""

    repo: str
    sha: str
    expires: float  # time.monotonic()
