"""The gate's facts and its answer as plain values: what the I/O layer gathers about a pull
request (:class:`GateInput`) and the checklist and verdict the gate gives back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

EVIDENCE_KINDS = ("merged", "deployed")
HISTORY = "history"

Outcome = Literal["failure", "action_required", "in_progress"]
CheckStatus = Literal["completed", "in_progress"]  # a check run's `status` while the bot sets it


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence that a digest reached an environment."""

    kind: str  # "merged" | "deployed" | "history" (it was live in this environment before)
    digest: str
    at: datetime  # aware
    url: str
    description: str
    # The environment the evidence was observed in. None means "gathered for the right
    # environment" (the I/O layer already filtered); when set it must be the gated
    # environment's upstream (`after`) for merged/deployed, and the environment itself for
    # history, so that evidence from an unrelated environment never satisfies a gate.
    environment: str | None = None
    # The canonical image name the evidence is about; None means "the change's own image".
    # The same digest under another name is another image: references compare by full name
    # and digest (docs/security.md).
    image: str | None = None


@dataclass(frozen=True)
class FailureMark:
    """Conveyor's own record that a trusted report said the digest failed in an environment
    within its ``watch`` (only Conveyor can write it: a check run of its app)."""

    digest: str
    environment: str
    at: datetime  # when the failure was reported
    url: str  # the report, or the mark when the report has no page


@dataclass(frozen=True)
class AttestationFinding:
    """The attestation condition of an image in an environment that requires one: verified
    (with what it says), or why not."""

    ok: bool
    text: str


@dataclass(frozen=True)
class ImageChange:
    """One image reference the pull request changes in a gated file.

    ``service`` and ``environment`` name the file's owner in the policy; ``owned`` is false
    for an image that is not that service's own (a sidecar, another registry's image).
    ``canonical`` is the comparable name the evidence must be about. ``tags_text`` replaces
    the default wording of the tags condition (the I/O layer names the registry's versions).
    """

    service: str
    environment: str
    path: str
    line: int
    image: str
    new_tag: str | None
    new_digest: str | None
    resolution_error: str | None
    allowed: bool
    tag_admitted: bool
    attestation: AttestationFinding | None = None  # None: no attestation is required
    owned: bool = True
    canonical: str | None = None
    tags_text: str | None = None
    # where the environment's build runs the image ("Deployment prod/web, container web"),
    # for an image found by building the environment rather than in a file
    workload: str | None = None


@dataclass(frozen=True)
class FileProblem:
    """A gated file the gate cannot judge (deleted, renamed, unreadable, unlisted...)."""

    environment: str
    path: str
    reason: str


@dataclass(frozen=True)
class BuildFinding:
    """What rendering one gated environment (its Kustomize overlay, ``kind`` "build", its
    chart, "render", or what a changed pointer — an Argo CD or Flux object syncing it — now
    follows, "pointer") at the PR's base and head showed: the workloads whose image changes,
    or why the render could not be judged (``problem``: it fails closed). ``rendering_off``:
    the tool is not there, files judged as files."""

    environment: str
    overlay: str  # the overlay's or the chart's folder; a pointer's description
    changes: tuple[str, ...] = ()
    problem: str | None = None
    rendering_off: bool = False
    kind: str = "build"  # "build" | "render" | "pointer"
    # a pointer: what it follows now ("" when deleted), and whether the environment's
    # approvals are asked although no image is new (it stops syncing the environment)
    follows: str | None = None
    needs_approval: bool = False


@dataclass(frozen=True)
class EnvironmentRules:
    """A gated environment's rules from the policy, as plain values."""

    name: str
    after: tuple[str, ...]  # the upstream environments: evidence is asked of each
    evidence: tuple[str, ...]
    soak: timedelta
    approvals: int
    allow_self_approval: bool = False
    # every environment this one comes after, directly or through others: a digest reported
    # failing in any of them is refused here
    ancestors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Review:
    """A pull request review.

    ``approver_of`` names the environments among the pull request's gated ones whose approvers
    include the review's author, as the I/O layer found them.
    """

    user: str
    state: str  # "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED"
    commit_id: str
    submitted_at: datetime
    is_bot: bool
    approver_of: frozenset[str]
    url: str


@dataclass(frozen=True)
class GateInput:
    changes: tuple[ImageChange, ...]
    rules: Mapping[str, EnvironmentRules]
    evidence: Mapping[str, tuple[Evidence, ...]]  # by digest
    rollback: bool
    reviews: tuple[Review, ...]
    head_sha: str
    pr_author: str
    requester: str | None  # who asked for the promotion (/promote author, release author)
    held: str | None  # hold reason ("" without one), None when not held
    freeze_until: Mapping[str, datetime | None]  # env -> end of the open freeze window
    now: datetime
    hold_url: str | None = None
    # by digest: what the deployed search saw besides evidence (a newer failure, ignored
    # reports and whose), shown on the digest's deployed condition
    evidence_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # by digest: why an upstream file that names a chart's version is no `merged` evidence
    merged_notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    problems: tuple[FileProblem, ...] = ()
    failures: Mapping[str, tuple[FailureMark, ...]] = field(default_factory=dict)  # by digest
    builds: tuple[BuildFinding, ...] = ()
    # The pull request changes the policy file: by gated environment, each rule it changes
    # there (`rules` holds those environments as the default branch's policy defines them),
    # or why the head's policy cannot be judged.
    policy_changed: bool = False
    policy_changes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    policy_problem: str | None = None
    # where GitHub does not enforce the gate: said at the top of every gated verdict
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Condition:
    """One line of the gate's checklist.

    ``subject`` names what the condition is about ("web → production" for an image change,
    "production" for an environment, "" for the pull request as a whole); ``when_unmet`` is the
    outcome the condition forces while ``ok`` is false; ``pending_until`` is when a running
    soak or freeze window ends.
    """

    ok: bool
    text: str
    link: str | None = None
    pending_until: datetime | None = None
    subject: str = ""
    when_unmet: Outcome = "failure"


@dataclass(frozen=True)
class Verdict:
    status: CheckStatus
    conclusion: str | None  # "success" | "failure" | "action_required"; None while in progress
    title: str
    conditions: tuple[Condition, ...]
    recheck_at: datetime | None
    evaluated_at: datetime | None = None
    notes: tuple[str, ...] = ()  # said above the checklist, decided nothing
    # what the cluster will run differently (the rendered diff, Markdown), for reviewers
    details: str = ""


NO_GATED_CHANGE = Verdict(
    status="completed",
    conclusion="success",
    title="No gated environment changed",
    conditions=(),
    recheck_at=None,
)
