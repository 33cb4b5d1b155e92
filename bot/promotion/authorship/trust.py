"""What Conveyor trusts about a pull request: only what Conveyor alone can have written.

Any writer can edit a PR's body (and its marker), title, labels and comments, and can name a
branch `conveyor/...`. Nobody but this app can open a PR as the app, or post a check run under
the app's name. A commit attributed to the app's bot counts as Conveyor's when GitHub signed
it as the app's (a commit made through the API by the app's installation token on github.com:
committer GitHub's `web-flow`, verified), or when it carries Conveyor's receipt
(`receipts.py`), which Conveyor posts on a commit it has just made that GitHub did not sign,
and on no other. A person who copies the bot's e-mail into a commit gets neither. A GitHub
Enterprise Server without web commit signing signs nothing: there the receipt alone proves
it. So every trust decision reads the trailers of that commit
(``bot.domain.promotions.trailers``), single-service promotions and release trains alike.

The body marker stays what it is: a display hint and an index for the resync.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.domain.promotions.marker import PromotionMarker, TrainMember, parse_marker
from bot.domain.promotions.trailers import CommitTrailers, Moved, read_trailers
from bot.domain.trains import train_digest
from bot.github.repos import commit_for_ref
from bot.promotion.authorship.receipts import has_receipt
from bot.text import short_digest

__all__ = [
    "ConveyorCommit",
    "authored_by",
    "conveyor_commit",
    "made_by",
    "opened_by_conveyor",
    "reconcile",
    "reconcile_train",
    "trusted_marker",
    "trusted_promotion",
    "trusted_pull",
    "trusted_train",
    "written_digest",
]

WEB_FLOW = "web-flow"
PULL_COMMITS_PAGE = 100


@dataclass(frozen=True)
class ConveyorCommit:
    """The facts of a promotion, from the trailers of the commit Conveyor made."""

    sha: str
    trailers: CommitTrailers
    head: bool  # the PR's head is this commit: nobody pushed after Conveyor

    @property
    def environment(self) -> str:
        return self.trailers.environment

    @property
    def moved(self) -> tuple[Moved, ...]:
        return self.trailers.moved

    @property
    def services(self) -> tuple[str, ...]:
        return tuple(move.service for move in self.moved)

    @property
    def digests(self) -> tuple[str, ...]:
        return tuple(move.digest for move in self.moved)

    @property
    def service(self) -> str:
        return self.moved[0].service

    @property
    def digest(self) -> str:
        return self.moved[0].digest

    @property
    def source_repo(self) -> str | None:
        return self.moved[0].source_repo

    @property
    def source_sha(self) -> str | None:
        return self.moved[0].source_sha

    @property
    def version(self) -> str | None:
        return self.trailers.version

    @property
    def tag(self) -> str | None:
        return self.trailers.tag

    @property
    def release_tag(self) -> str | None:
        return self.trailers.release_tag

    @property
    def requester(self) -> str | None:
        return self.trailers.requester

    @property
    def rollback(self) -> bool:
        return self.trailers.rollback

    @property
    def train(self) -> str | None:
        """The group a release train (or its rollback) moves; None for a single service."""
        return self.trailers.train

    @property
    def is_train(self) -> bool:
        return self.trailers.train is not None

    def agrees_with(self, marker: PromotionMarker | None) -> bool:
        """Whether a body marker tells the same story (a single-service promotion)."""
        return marker is not None and not marker.is_train and (
            marker.service, marker.environment, marker.digest) == (
            self.service, self.environment, self.digest)


def opened_by_conveyor(bot_login: str, pr: dict[str, Any]) -> bool:
    """Opened by this app from a branch of the repository itself: a marker and a branch name
    alone can be copied into anyone's pull request."""
    author = str((pr.get("user") or {}).get("login") or "")
    head_repo = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    base_repo = ((pr.get("base") or {}).get("repo") or {}).get("full_name")
    return bool(bot_login) and author.lower() == bot_login.lower() and (
        head_repo is None or head_repo == base_repo)


def authored_by(commit: dict[str, Any], bot_login: str) -> bool:
    """Whether GitHub attributes the commit to the app's bot (anyone can claim that)."""
    author = (commit.get("author") or {}).get("login") or ""
    return bool(bot_login) and author.lower() == bot_login.lower()


def signed_as(commit: dict[str, Any], bot_login: str) -> bool:
    """Whether GitHub signed the commit as one the app made through the API."""
    committer = (commit.get("committer") or {}).get("login") or ""
    verified = ((commit.get("commit") or {}).get("verification") or {}).get("verified")
    return verified is True and committer.lower() in (bot_login.lower(), WEB_FLOW)


async def made_by(gh: GitHubAPI, full_name: str, commit: dict[str, Any], bot_login: str) -> bool:
    """Whether Conveyor made the commit: the app's bot is its author, and GitHub signed it
    so or it carries Conveyor's receipt (asked only when GitHub did not sign it)."""
    if not authored_by(commit, bot_login):
        return False
    return signed_as(commit, bot_login) or await has_receipt(gh, full_name, str(commit["sha"]),
                                                             bot_login)


def conveyor_commit(commit: dict[str, Any], *, head: bool) -> ConveyorCommit | None:
    """The promotion a commit's trailers describe (whoever made it: ask `made_by`)."""
    trailers = read_trailers(str((commit.get("commit") or {}).get("message") or ""))
    return None if trailers is None else ConveyorCommit(str(commit["sha"]), trailers, head)


async def trusted_pull(gh: GitHubAPI, full_name: str, pr: dict[str, Any], bot_login: str
                       ) -> ConveyorCommit | None:
    """Conveyor's commit of a PR Conveyor opened; None for anyone else's PR.

    The head commit is read first (cached for good by its sha); only when someone pushed on
    top are the PR's commits listed to find Conveyor's own."""
    if not opened_by_conveyor(bot_login, pr):
        return None
    head_sha = str((pr.get("head") or {}).get("sha") or "")
    head = await commit_for_ref(gh, full_name, head_sha) if head_sha else None
    found = await _own_promotion(gh, full_name, head, bot_login, head=True) if head else None
    if found is not None:
        return found
    commits = await gh.getitem(
        f"/repos/{full_name}/pulls/{pr['number']}/commits?per_page={PULL_COMMITS_PAGE}")
    for commit in commits or []:
        found = await _own_promotion(gh, full_name, commit, bot_login, head=False)
        if found is not None:
            return found
    return None


async def written_digest(gh: GitHubAPI, full_name: str, sha: str, service: str, environment: str,
                         bot_login: str) -> str | None:
    """The digest of ``service`` that Conveyor's promotion into ``environment`` wrote, when
    ``sha`` is the merge of that promotion's PR and nobody pushed after Conveyor's commit (a
    file that names a chart's version alone holds no digest: this is the record of it)."""
    pulls = await gh.getitem(f"/repos/{full_name}/commits/{sha}/pulls")
    for pr in pulls or []:
        if not pr.get("merged_at"):
            continue
        own = await trusted_pull(gh, full_name, pr, bot_login)
        if own is None or not own.head or own.environment != environment:
            continue
        return next((d for name, d in zip(own.services, own.digests, strict=False)
                     if name == service), None)
    return None


async def _own_promotion(gh: GitHubAPI, full_name: str, commit: dict[str, Any], bot_login: str,
                         *, head: bool) -> ConveyorCommit | None:
    found = conveyor_commit(commit, head=head)
    return found if found is not None and await made_by(gh, full_name, commit, bot_login) else None


def reconcile(marker: PromotionMarker | None, trusted: ConveyorCommit) -> PromotionMarker:
    """The facts of a single-service promotion, every one a later promotion or trace may
    carry on (version, tags, source, requester) from Conveyor's commit alone; from the body
    marker only display details nothing reads to decide or write (the files, what they held
    before, the upstream PR) — and not even those when the marker tells another story."""
    facts = PromotionMarker(
        service=trusted.service, environment=trusted.environment, digest=trusted.digest,
        tag=trusted.tag, version=trusted.version or trusted.tag or short_digest(trusted.digest),
        paths=(), source_repo=trusted.source_repo or "", source_sha=trusted.source_sha,
        requester=trusted.requester, kind="rollback" if trusted.rollback else "promotion",
        commit=trusted.sha, release_tag=trusted.release_tag)
    if marker is None or not trusted.agrees_with(marker):
        return facts
    return replace(facts, paths=marker.paths, previous_digest=marker.previous_digest,
                   previous_tag=marker.previous_tag, upstream_pr=marker.upstream_pr)


async def trusted_marker(gh: GitHubAPI, full_name: str, pr: dict[str, Any], bot_login: str
                         ) -> tuple[PromotionMarker, ConveyorCommit] | None:
    """A single-service promotion PR Conveyor opened, with its trusted facts; None for a PR
    of anyone else and for a release train (`trusted_train` reads those)."""
    found = await trusted_promotion(gh, full_name, pr, bot_login)
    return None if found is None or found[1].is_train else found


async def trusted_promotion(gh: GitHubAPI, full_name: str, pr: dict[str, Any], bot_login: str
                            ) -> tuple[PromotionMarker, ConveyorCommit] | None:
    """A promotion, rollback or release train Conveyor opened: the facts of its commit, with
    what the body adds for display; None for a PR of anyone else."""
    trusted = await trusted_pull(gh, full_name, pr, bot_login)
    if trusted is None:
        return None
    shown = parse_marker(pr.get("body"))
    if trusted.is_train:
        return reconcile_train(shown, trusted), trusted
    return reconcile(shown, trusted), trusted


def reconcile_train(marker: PromotionMarker | None, trusted: ConveyorCommit) -> PromotionMarker:
    """A release train's facts: its group, environment, requester, kind and every member's
    service, digest and source commit from Conveyor's commit; from the body's marker only
    display details (version, tag, path, what the file held before) of a member whose
    service and digest the commit names too."""
    shown = ({(m.service, m.digest): m for m in marker.members}
             if marker is not None and marker.is_train else {})
    members = []
    for move in trusted.moved:
        member = shown.get((move.service, move.digest))
        members.append(TrainMember(
            service=move.service, digest=move.digest, source_sha=move.source_sha,
            tag=member.tag if member else None,
            version=member.version if member else short_digest(move.digest),
            path=member.path if member else "",
            previous_digest=member.previous_digest if member else None,
            previous_tag=member.previous_tag if member else None))
    group = trusted.train or ""
    return PromotionMarker(
        service=group, environment=trusted.environment, digest=train_digest(trusted.digests),
        tag=None, version="", paths=tuple(dict.fromkeys(m.path for m in members if m.path)),
        source_repo="", requester=trusted.requester,
        kind="rollback" if trusted.rollback else "train", commit=trusted.sha, group=group,
        members=tuple(members))


async def trusted_train(gh: GitHubAPI, full_name: str, pr: dict[str, Any], bot_login: str
                        ) -> tuple[PromotionMarker, ConveyorCommit] | None:
    """A release train Conveyor opened, with its trusted facts; None for a PR of anyone
    else and for a single-service promotion."""
    found = await trusted_promotion(gh, full_name, pr, bot_login)
    return None if found is None or not found[1].is_train else found
