"""What Conveyor trusts about a pull request: only what Conveyor alone can have written.

Any writer can edit a PR's body (and its marker), title, labels and comments, and can name a
branch `conveyor/...`. Nobody but this app can open a PR as the app, or post a check run under
the app's name: Conveyor posts its receipt (`receipts.py`) on every commit it makes, and on no
other. A commit attributed to the app's bot counts as Conveyor's when it carries that receipt,
or when GitHub signed it as the app's (a commit made through the API by the app's installation
token on github.com: committer GitHub's `web-flow`, verified). A person who copies the bot's
e-mail into a commit gets neither. A GitHub Enterprise Server without web commit signing
signs nothing: there the receipt alone proves it. So every trust decision reads the trailers of
that commit:

    Conveyor-Service / -Environment / -Digest / -Source / -Version / -Tag / -Requested-By /
    -Kind (rollback) / -Train

The body marker stays what it is: a display hint and an index for the resync.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gidgethub.abc import GitHubAPI

from bot.github.repos import commit_for_ref
from bot.promotion.authorship.marker import PromotionMarker, parse_marker
from bot.promotion.authorship.receipts import has_receipt
from bot.text import short_digest

__all__ = [
    "ConveyorCommit",
    "authored_by",
    "conveyor_commit",
    "made_by",
    "opened_by_conveyor",
    "parse_trailers",
    "reconcile",
    "trusted_marker",
    "trusted_pull",
    "written_digest",
]

WEB_FLOW = "web-flow"
PULL_COMMITS_PAGE = 100


@dataclass(frozen=True)
class ConveyorCommit:
    """The facts of a promotion, from the trailers of the commit Conveyor made."""

    sha: str
    environment: str
    services: tuple[str, ...]
    digests: tuple[str, ...]
    source_repo: str | None
    source_sha: str | None
    version: str | None
    tag: str | None
    requester: str | None
    rollback: bool
    train: str | None
    head: bool  # the PR's head is this commit: nobody pushed after Conveyor

    @property
    def service(self) -> str:
        return self.services[0] if self.services else ""

    @property
    def digest(self) -> str:
        return self.digests[0] if self.digests else ""

    def agrees_with(self, marker: PromotionMarker | None) -> bool:
        """Whether a body marker tells the same story (a single-service promotion)."""
        return marker is not None and marker.kind != "train" and (
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


def parse_trailers(message: str) -> dict[str, list[str]]:
    """``Key: value`` lines of the message's last paragraph, every value of each key."""
    paragraphs = [p for p in message.replace("\r\n", "\n").strip().split("\n\n") if p.strip()]
    found: dict[str, list[str]] = {}
    if len(paragraphs) < 2:
        return found
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def authored_by(commit: dict[str, Any], bot_login: str) -> bool:
    """Whether GitHub attributes the commit to the app's bot (anyone can claim that)."""
    author = (commit.get("author") or {}).get("login") or ""
    return bool(bot_login) and author.lower() == bot_login.lower()


def signed_as(commit: dict[str, Any], bot_login: str) -> bool:
    """Whether GitHub signed the commit as one the app made through the API."""
    committer = (commit.get("committer") or {}).get("login") or ""
    verified = ((commit.get("commit") or {}).get("verification") or {}).get("verified")
    return verified is True and committer.lower() in (bot_login.lower(), WEB_FLOW)


async def made_by(gh: GitHubAPI, repo: str, commit: dict[str, Any], bot_login: str) -> bool:
    """Whether Conveyor made the commit: the app's bot is its author, and GitHub signed it
    so or it carries Conveyor's receipt (asked only when GitHub did not sign it)."""
    if not authored_by(commit, bot_login):
        return False
    return signed_as(commit, bot_login) or await has_receipt(gh, repo, str(commit["sha"]),
                                                             bot_login)


def conveyor_commit(commit: dict[str, Any], *, head: bool) -> ConveyorCommit | None:
    """The promotion a commit's trailers describe (whoever made it: ask `made_by`)."""
    trailers = parse_trailers(str((commit.get("commit") or {}).get("message") or ""))
    environment = (trailers.get("Conveyor-Environment") or [""])[0]
    services = tuple(trailers.get("Conveyor-Service") or ())
    digests = tuple(trailers.get("Conveyor-Digest") or ())
    if not environment or not services or len(services) != len(digests):
        return None
    source = (trailers.get("Conveyor-Source") or [""])[0]
    source_repo, _, source_sha = source.partition("@")
    return ConveyorCommit(
        sha=str(commit["sha"]), environment=environment, services=services, digests=digests,
        source_repo=source_repo or None,
        source_sha=source_sha if source_sha and source_sha != "unknown" else None,
        version=_first(trailers, "Conveyor-Version"), tag=_first(trailers, "Conveyor-Tag"),
        requester=_first(trailers, "Conveyor-Requested-By"),
        rollback=_first(trailers, "Conveyor-Kind") == "rollback",
        train=_first(trailers, "Conveyor-Train"), head=head,
    )


def _first(trailers: dict[str, list[str]], key: str) -> str | None:
    values = trailers.get(key)
    return values[0] if values else None


async def trusted_pull(gh: GitHubAPI, repo: str, pr: dict[str, Any], bot_login: str
                       ) -> ConveyorCommit | None:
    """Conveyor's commit of a PR Conveyor opened; None for anyone else's PR.

    The head commit is read first (cached for good by its sha); only when someone pushed on
    top are the PR's commits listed to find Conveyor's own."""
    if not opened_by_conveyor(bot_login, pr):
        return None
    head_sha = str((pr.get("head") or {}).get("sha") or "")
    head = await commit_for_ref(gh, repo, head_sha) if head_sha else None
    found = await _own_promotion(gh, repo, head, bot_login, head=True) if head else None
    if found is not None:
        return found
    commits = await gh.getitem(
        f"/repos/{repo}/pulls/{pr['number']}/commits?per_page={PULL_COMMITS_PAGE}")
    for commit in commits or []:
        found = await _own_promotion(gh, repo, commit, bot_login, head=False)
        if found is not None:
            return found
    return None


async def written_digest(gh: GitHubAPI, repo: str, sha: str, service: str, environment: str,
                         bot_login: str) -> str | None:
    """The digest of ``service`` that Conveyor's promotion into ``environment`` wrote, when
    ``sha`` is the merge of that promotion's PR and nobody pushed after Conveyor's commit (a
    file that names a chart's version alone holds no digest: this is the record of it)."""
    pulls = await gh.getitem(f"/repos/{repo}/commits/{sha}/pulls")
    for pr in pulls or []:
        if not pr.get("merged_at"):
            continue
        own = await trusted_pull(gh, repo, pr, bot_login)
        if own is None or not own.head or own.environment != environment:
            continue
        return next((d for name, d in zip(own.services, own.digests, strict=False)
                     if name == service), None)
    return None


async def _own_promotion(gh: GitHubAPI, repo: str, commit: dict[str, Any], bot_login: str,
                         *, head: bool) -> ConveyorCommit | None:
    found = conveyor_commit(commit, head=head)
    return found if found is not None and await made_by(gh, repo, commit, bot_login) else None


def reconcile(marker: PromotionMarker | None, trusted: ConveyorCommit) -> PromotionMarker:
    """The facts of a single-service promotion: what trust rests on from Conveyor's commit,
    only the display details (paths, previous version, upstream PR) from the body marker —
    and not even those when the marker tells another story (it was edited)."""
    version = trusted.version or trusted.tag or short_digest(trusted.digest)
    kind = "rollback" if trusted.rollback else "promotion"
    if marker is None or not trusted.agrees_with(marker):
        marker = PromotionMarker(service=trusted.service, environment=trusted.environment,
                                 digest=trusted.digest, tag=trusted.tag, version=version,
                                 paths=(), source_repo=trusted.source_repo or "")
    return replace(marker, service=trusted.service, environment=trusted.environment,
                   digest=trusted.digest, source_repo=trusted.source_repo or marker.source_repo,
                   source_sha=trusted.source_sha, requester=trusted.requester, kind=kind,
                   commit=trusted.sha, tag=trusted.tag or marker.tag,
                   version=trusted.version or marker.version)


async def trusted_marker(gh: GitHubAPI, repo: str, pr: dict[str, Any], bot_login: str
                         ) -> tuple[PromotionMarker, ConveyorCommit] | None:
    """A single-service promotion PR Conveyor opened, with its trusted facts; None for a PR
    of anyone else and for a release train (its readers check trains on their own)."""
    trusted = await trusted_pull(gh, repo, pr, bot_login)
    if trusted is None or trusted.train is not None:
        return None
    return reconcile(parse_marker(pr.get("body")), trusted), trusted
