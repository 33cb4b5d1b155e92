"""Rollback: which digest was live in an environment before, read from the file's history.

The deployment repository is the record of what ran where: every change of an environment's
file on the default branch is a commit. `/rollback` reads the last commits that touched the
file (bounded), turns them into live periods — "this digest was pinned from commit A until
commit B replaced it" — and picks the previous one, or the one asked for if it ran there
before. Choosing is pure; reading the history is the only I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.images import is_digest
from bot.domain.policy import Policy
from bot.domain.tags import version_from_tag
from bot.github.repos import get_file
from bot.manifests import ManifestError, find_images
from bot.manifests.charts import VERSION_ONLY_SHAPES
from bot.promotion.authorship.trust import written_digest
from bot.promotion.evidence.deployed import parse_time
from bot.promotion.evidence.finder import MAX_HISTORY_COMMITS
from bot.text import format_minute, short_digest

__all__ = [
    "MAX_HISTORY_COMMITS",
    "Choice",
    "LivePeriod",
    "Pinned",
    "choose_rollback",
    "live_periods",
    "read_history",
    "rollback_note",
]


@dataclass(frozen=True)
class Pinned:
    """What one commit of the default branch left in the environment's file."""

    sha: str
    at: datetime
    url: str
    tag: str | None
    digest: str | None  # None when the file names the image by tag only (or not at all)


@dataclass(frozen=True)
class LivePeriod:
    """A digest (or an unpinned tag) that stayed in the file across consecutive commits."""

    digest: str | None
    tag: str | None
    start: Pinned  # the oldest commit of the run that was read
    end: Pinned | None  # the commit that replaced it; None while it is still live
    complete: bool = True  # False when the history was cut before the run's first commit

    @property
    def version(self) -> str:
        if self.tag:
            return version_from_tag(self.tag)
        return short_digest(self.digest) if self.digest else ""


@dataclass(frozen=True)
class Choice:
    period: LivePeriod | None
    refusal: str | None = None


def live_periods(history: Sequence[Pinned], *, truncated: bool = False) -> list[LivePeriod]:
    """Runs of equal pins, newest first; ``history`` is newest first, as GitHub lists it."""
    periods: list[LivePeriod] = []
    replaced_by: Pinned | None = None
    index = 0
    while index < len(history):
        newest = history[index]
        key = _key(newest)
        oldest = newest
        index += 1
        while index < len(history) and _key(history[index]) == key:
            oldest = history[index]
            index += 1
        periods.append(LivePeriod(newest.digest, newest.tag or oldest.tag, oldest, replaced_by,
                                  complete=not (truncated and index == len(history))))
        replaced_by = oldest
    return periods


def _key(pinned: Pinned) -> str:
    return pinned.digest or f"tag:{pinned.tag}"


def choose_rollback(periods: Sequence[LivePeriod], environment: str, service: str,
                    wanted: str | None = None, wanted_digest: str | None = None) -> Choice:
    """The period to go back to: the newest earlier digest, or the one named by ``wanted``
    (a tag or a digest; ``wanted_digest`` is a tag's digest from the registry, if known)."""
    if not periods:
        return Choice(None, f"the history of {service}'s file in {environment} is empty")
    current = periods[0]
    if wanted is None:
        for period in periods[1:]:
            if period.digest is not None and period.digest != current.digest:
                return Choice(period)
        return Choice(None, f"no earlier digest of {service} was live in {environment} "
                            f"in the last {MAX_HISTORY_COMMITS} changes of its file")
    matches = [p for p in periods if _matches(p, wanted, wanted_digest)]
    if matches and matches[0] is current:
        return Choice(None, f"{service} {_name(wanted)} is what {environment} runs now; "
                            "nothing to roll back")
    for period in matches:
        if period.digest is not None:
            if period.digest == current.digest:
                return Choice(None, f"{service} {_name(wanted)} is what {environment} runs "
                                    "now; nothing to roll back")
            return Choice(period)
    if matches:
        return Choice(None, f"{service} {_name(wanted)} ran in {environment} but was not "
                            "pinned by digest, so Conveyor cannot prove what ran")
    return Choice(None, f"{service} {_name(wanted)} was not live in {environment} in the "
                        f"last {MAX_HISTORY_COMMITS} changes of its file; a rollback goes "
                        "back to a digest that ran there before (use /promote for a new one)")


def _matches(period: LivePeriod, wanted: str, wanted_digest: str | None) -> bool:
    if is_digest(wanted):
        return period.digest == wanted
    if wanted_digest is not None and period.digest == wanted_digest:
        return True
    return period.tag is not None and version_from_tag(period.tag) == version_from_tag(wanted)


def _name(wanted: str) -> str:
    return short_digest(wanted) if is_digest(wanted) else wanted


def rollback_note(period: LivePeriod, environment: str) -> str:
    """The evidence paragraph of a rollback PR's body."""
    since = _commit(period.start)
    if not period.complete:
        since = f"before {since}"
    until = f"to {_commit(period.end)}" if period.end is not None else "until now"
    return (f"**Rollback.** This digest is not new to {environment}: it ran in {environment} "
            f"from {since} {until}. That history is its evidence; the approvals of "
            f"{environment} still apply.")


def _commit(pinned: Pinned) -> str:
    return f"[`{pinned.sha[:7]}`]({pinned.url}) ({format_minute(pinned.at)})"


async def read_history(gh: GitHubAPI, full_name: str, default_branch: str, policy: Policy,
                       service: str, environment: str, bot_login: str = ""
                       ) -> tuple[list[Pinned], bool]:
    """The pins of the last commits that touched the file, newest first, and whether the
    history was cut at the bound (older commits exist that were not read). A chart named by
    its version alone is given the digest Conveyor's promotion wrote with that version."""
    image = policy.services[service].image
    path = policy.path_for(service, environment)
    commits = await gh.getitem(
        f"/repos/{full_name}/commits?sha={quote(default_branch)}&path={quote(path)}"
        f"&per_page={MAX_HISTORY_COMMITS}"
    )
    history = []
    versions_only: set[str] = set()
    for commit in commits[:MAX_HISTORY_COMMITS]:
        sha = str(commit["sha"])
        found = await get_file(gh, full_name, path, sha)
        tag, digest = None, None
        if found is not None:
            try:
                occurrences = find_images(found.text, image, path=path)
            except ManifestError:
                occurrences = []
            pinned = next((o for o in occurrences if o.digest), None)
            first = pinned or (occurrences[0] if occurrences else None)
            if first is not None:
                tag, digest = first.tag, first.digest
                if first.shape in VERSION_ONLY_SHAPES:
                    versions_only.add(sha)
        history.append(Pinned(
            sha=sha, at=parse_time(commit["commit"]["committer"]["date"]),
            url=str(commit.get("html_url") or ""), tag=tag, digest=digest,
        ))
    if policy.services[service].is_chart and versions_only:
        history = await _written_digests(gh, full_name, history, versions_only, service,
                                         environment, bot_login)
    return history, len(commits) >= MAX_HISTORY_COMMITS


async def _written_digests(gh: GitHubAPI, full_name: str, history: list[Pinned],
                           versions_only: set[str], service: str, environment: str,
                           bot_login: str) -> list[Pinned]:
    """Oldest first: a version-only pin takes the digest Conveyor wrote at its commit, else
    the digest of the older commit when it named the same version (an unrelated edit of the
    file), else none — which chart ran there is then not known."""
    known: Pinned | None = None
    out: list[Pinned] = []
    for pin in reversed(history):
        if pin.sha in versions_only and pin.digest is None and pin.tag:
            written = await written_digest(gh, full_name, pin.sha, service, environment, bot_login)
            inherited = known.digest if known is not None and known.tag == pin.tag else None
            pin = replace(pin, digest=written or inherited)
        out.append(pin)
        known = pin
    return list(reversed(out))
