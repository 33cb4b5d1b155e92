"""Whether a promotion or release-train pull request is opened, as a pure function.

The openers gather facts only as the decision asks for them: :func:`decide_opening` answers
with an :class:`Opening` (open the PR, or why not) or with the :data:`Reading` it needs next.
An answer that needs no more facts costs no more requests: a tag refusal reads nothing, an
open PR for the branch is adopted before any file is read, and a command's explicit
`/promote` never looks for an earlier PR of the branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bot.domain.tags import is_newer

__all__ = [
    "FileEdit",
    "OpenPromotion",
    "Opening",
    "OpeningFacts",
    "OpeningKind",
    "PullRef",
    "Reading",
    "ServiceSubject",
    "TrainSubject",
    "decide_opening",
]

OpeningKind = Literal["open", "exists", "live", "skipped", "refused"]
# What the decision needs read next, named by the fact it fills in: the repository's open
# PRs, the edit of the files at the default branch's head, the service's other open
# promotions into the environment, the PRs ever made from the branch.
Reading = Literal["open_pulls", "edit", "promotions", "earlier_pulls"]


@dataclass(frozen=True)
class PullRef:
    number: int
    url: str


@dataclass(frozen=True)
class ServiceSubject:
    """One service's candidate, edited into the service's file of the environment."""

    service: str
    version: str
    path: str


@dataclass(frozen=True)
class TrainSubject:
    """A release train: several services of one group at once."""

    group: str


@dataclass(frozen=True)
class FileEdit:
    """What editing the files at the default branch's head came to."""

    refusal: str | None = None  # why they cannot be edited: a missing file, no such image
    changed: bool = True  # False: they pin the digest already
    live_tag: str | None = None  # the tag a single service's file pinned before the edit


@dataclass(frozen=True)
class OpenPromotion:
    """Another open promotion PR of the same service into the same environment (from the
    trusted facts of Conveyor's own commit)."""

    number: int
    version: str


@dataclass(frozen=True)
class OpeningFacts:
    """What is known so far; ``None`` is "not read yet"."""

    subject: ServiceSubject | TrainSubject
    environment: str
    rollback: bool
    explicit: bool  # a command asked for this PR by name
    tag_refusals: tuple[str, ...] = ()  # the environment's tag policy refuses these
    branch: str | None = None  # a train's branch is named by the digests its edits set
    open_pulls: Mapping[str, PullRef] | None = None  # by head branch
    edit: FileEdit | None = None
    promotions: tuple[OpenPromotion, ...] | None = None
    earlier_pulls: tuple[PullRef, ...] | None = None  # made from the branch, none open


@dataclass(frozen=True)
class Opening:
    """The decision: ``open`` the PR, or which PR or reason stands in its way."""

    kind: OpeningKind
    message: str = ""
    pull: PullRef | None = None


def decide_opening(facts: OpeningFacts) -> Opening | Reading:
    """Whether the PR of ``facts`` is opened, or the reading that decides it.

    In order: a tag policy refuses it (not a rollback); a PR of the same branch is open; the
    files cannot be edited or already pin the digest; a newer version is live or promoted (a
    single service, neither explicit nor a rollback); a PR of the branch was closed without
    merging (not explicit). Otherwise ``open``.
    """
    if facts.tag_refusals and not facts.rollback:
        return Opening("refused", "; ".join(facts.tag_refusals))
    if facts.branch is None:
        return _without_branch(facts)
    if facts.open_pulls is None:
        return "open_pulls"
    existing = facts.open_pulls.get(facts.branch)
    if existing is not None:
        return Opening("exists", "already open:", existing)
    if facts.edit is None:
        return "edit"
    for check in (_no_change, _newer, _closed_before):
        stop = check(facts, facts.edit)
        if stop is not None:
            return stop
    return Opening("open")


def _without_branch(facts: OpeningFacts) -> Opening | Reading:
    """A train is named by the digests its edits set: a train that sets none has no PR."""
    if facts.edit is None:
        return "edit"
    stop = _no_change(facts, facts.edit)
    if stop is None:
        raise ValueError("an edit that changes files names its branch")
    return stop


def _no_change(facts: OpeningFacts, edit: FileEdit) -> Opening | None:
    if edit.refusal is not None:
        return Opening("refused", edit.refusal)
    if edit.changed:
        return None
    subject = facts.subject
    if isinstance(subject, TrainSubject):
        return Opening("live", f"every service of {subject.group} already runs that digest in "
                               f"{facts.environment}")
    return Opening("live", f"{subject.service} {subject.version} is already live in "
                           f"{facts.environment} (`{subject.path}`)")


def _newer(facts: OpeningFacts, edit: FileEdit) -> Opening | Reading | None:
    subject = facts.subject
    if not isinstance(subject, ServiceSubject) or facts.explicit or facts.rollback:
        return None
    if is_newer(edit.live_tag, subject.version):
        return Opening("skipped", f"{subject.service} {edit.live_tag} is live in "
                                  f"{facts.environment}, newer than {subject.version}; use "
                                  "/rollback to go back")
    if facts.promotions is None:
        return "promotions"
    for promotion in facts.promotions:
        if is_newer(promotion.version, subject.version):
            return Opening("skipped", f"#{promotion.number} already promotes the newer "
                                      f"{promotion.version} to {facts.environment}")
    return None


def _closed_before(facts: OpeningFacts, _edit: FileEdit) -> Opening | Reading | None:
    if facts.explicit:
        return None
    if facts.earlier_pulls is None:
        return "earlier_pulls"
    if not facts.earlier_pulls:
        return None
    again = (f"`/promote {facts.environment} {facts.subject.group}`"
             if isinstance(facts.subject, TrainSubject) else "`/promote`")
    return Opening("skipped", f"closed without merging; {again} opens it again:",
                   facts.earlier_pulls[0])
