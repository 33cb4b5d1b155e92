"""Since when each service's reference in a file is what it is, and the pull request that set it.

"Since" is the commit that changed *this service's* image reference in its file, not the last
commit that touched the file: several services often share one file (a Kustomize overlay
listing every image), and promoting one must not move the others' dates.

Two sources, cheapest first:
- Conveyor's own merged promotion pull requests (`GET /pulls?state=closed`, newest first, a few
  pages when cold, then the first page, conditional): the latest merged promotion of (service,
  environment) whose marker names the digest (or tag) the file pins now gives the merge date, the
  merge commit and the PR. The marker only says what to show here, nothing is trusted on it, and
  only pull requests opened by the app from the repository's own branches are read;
- otherwise (a change by hand, or a promotion older than the pages read) the file's history
  (`GET /commits?path=`), walked back to the first commit whose parent pinned something else
  for the service (file texts at a commit never change and are kept), and the PR that merged it
  (`GET /commits/{sha}/pulls`). These walks are bounded per read: when a cold start finds many
  files changed by hand, the next reads fill in the rest, and each answer is kept for as long as
  the service's reference stays the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import cachetools
from gidgethub.abc import GitHubAPI

from bot.domain.promotions.marker import parse_marker
from bot.github.refusals import or_none
from bot.github.repos import get_file
from bot.github.snapshot import RepoFiles
from bot.manifests import ManifestError, find_images

if TYPE_CHECKING:
    from bot.runtime.context import Context

COLD_PAGES = 5  # closed pull requests read when a repository is first seen (500)
WALKS_PER_READ = 10  # history walks per read of a repository's status
WALK_DEPTH = 10  # commits of a file's history looked at per walk
KEPT_PER_TARGET = 20  # merged promotions remembered per (service, environment)

Ref = tuple[str | None, str | None]  # (tag, digest) the file pins for the service


@dataclass(frozen=True)
class Since:
    when: datetime | None
    sha: str | None
    url: str | None
    pull_number: int | None
    pull_url: str | None


UNKNOWN = Since(None, None, None, None, None)


@dataclass(frozen=True)
class MergedPromotion:
    number: int
    url: str
    merged_at: datetime
    merge_commit: str | None
    digest: str
    tag: str | None
    version: str


@dataclass
class _Merged:
    by_target: dict[tuple[str, str], list[MergedPromotion]] = field(default_factory=dict)
    seen: set[int] = field(default_factory=set)
    loaded: bool = False


@dataclass(frozen=True)
class Wanted:
    """One row to date: a service's reference in an environment's file."""

    service: str
    environment: str
    path: str
    image: str
    ref: Ref
    blob: str | None = None  # the file's blob at the branch head
    tag_key: str | None = None


class ChangeHistory:
    def __init__(self, entries: int = 4096) -> None:
        self._merged: dict[str, _Merged] = {}
        self._since: cachetools.LRUCache[tuple[str, str, str, str], tuple[Ref, Since]] = (
            cachetools.LRUCache(maxsize=entries))
        self._by_commit: cachetools.LRUCache[tuple[str, str], tuple[int, str] | None] = (
            cachetools.LRUCache(maxsize=entries))
        self._created: cachetools.LRUCache[tuple[str, str], dict[str, str]] = (
            cachetools.LRUCache(maxsize=64))

    def ensure_capacity(self, entries: int) -> None:
        if entries <= self._since.maxsize:
            return
        for name in ("_since", "_by_commit"):
            old = getattr(self, name)
            grown: cachetools.LRUCache[Any, Any] = cachetools.LRUCache(maxsize=entries)
            grown.update(old)
            setattr(self, name, grown)

    async def dates(self, ctx: Context, gh: GitHubAPI, full_name: str, wanted: list[Wanted],
                    files: RepoFiles) -> dict[tuple[str, str], Since]:
        """(service, environment) → since; rows the bounded walks did not reach are left out."""
        merged = await self._merged_promotions(ctx, gh, full_name)
        out: dict[tuple[str, str], Since] = {}

        def record(row: Wanted, since: Since) -> None:
            self._since[(full_name.lower(), row.path, row.service, row.environment)] = (
                row.ref, since)
            out[(row.service, row.environment)] = since

        unresolved: list[Wanted] = []
        for row in wanted:
            cached = self._since.get((full_name.lower(), row.path, row.service, row.environment))
            known = cached[1] if cached is not None and cached[0] == row.ref else None
            promotion = _latest_matching(merged.by_target.get((row.service, row.environment)),
                                         row.ref)
            if promotion is not None and (known is None or known.when is None
                                          or promotion.merged_at >= known.when):
                known = Since(promotion.merged_at, promotion.merge_commit,
                              _commit_url(ctx, full_name, promotion.merge_commit), promotion.number,
                              promotion.url)
            if known is None:
                unresolved.append(row)
            else:
                record(row, known)
        walks = 0
        while unresolved and walks < WALKS_PER_READ:
            walks += 1
            row = unresolved.pop(0)
            since, added = await self._walk(ctx, gh, full_name, row, files)
            record(row, since)
            if added and since.sha:
                # A commit that created the file set every reference in it: the other files it
                # created and that are unchanged since (same blob) date from it too (an import).
                created = await self._created_in(gh, full_name, since.sha)
                still = []
                for other in unresolved:
                    if other.blob is not None and created.get(other.path) == other.blob:
                        record(other, since)
                    else:
                        still.append(other)
                unresolved = still
        return out

    async def _created_in(self, gh: GitHubAPI, full_name: str, sha: str) -> dict[str, str]:
        """path → blob sha of the files a commit added (GitHub lists up to 3,000)."""
        key = (full_name.lower(), sha)
        if key not in self._created:
            created: dict[str, str] = {}
            async for item in gh.getiter(f"/repos/{full_name}/commits/{sha}", iterable_key="files"):
                if item.get("status") == "added" and item.get("sha"):
                    created[str(item["filename"])] = str(item["sha"])
            self._created[key] = created
        return self._created[key]

    async def _merged_promotions(self, ctx: Context, gh: GitHubAPI, full_name: str) -> _Merged:
        entry = self._merged.setdefault(full_name.lower(), _Merged())
        pages = 1 if entry.loaded else COLD_PAGES
        url: str | None = (f"/repos/{full_name}/pulls?state=closed&sort=updated&direction=desc"
                           "&per_page=100")
        for _ in range(pages):
            if url is None:
                break
            data, url = await _page(gh, url)
            for pr in data:
                self._note(ctx, entry, pr)
        entry.loaded = True
        return entry

    def _note(self, ctx: Context, entry: _Merged, pr: dict[str, Any]) -> None:
        number = int(pr["number"])
        if number in entry.seen or not pr.get("merged_at") or not opened_by_app(ctx, pr):
            return
        marker = parse_marker(pr.get("body"))
        if marker is None:
            return
        entry.seen.add(number)
        found = MergedPromotion(
            number=number, url=str(pr.get("html_url") or ""),
            merged_at=_when(str(pr["merged_at"])) or datetime.min,
            merge_commit=str(pr.get("merge_commit_sha") or "") or None,
            digest=marker.digest, tag=marker.tag, version=marker.version)
        target = entry.by_target.setdefault((marker.service, marker.environment), [])
        target.append(found)
        target.sort(key=lambda p: p.merged_at, reverse=True)
        for dropped in target[KEPT_PER_TARGET:]:
            entry.seen.discard(dropped.number)
        del target[KEPT_PER_TARGET:]

    async def _walk(self, ctx: Context, gh: GitHubAPI, full_name: str, row: Wanted,
                    files: RepoFiles) -> tuple[Since, bool]:
        """The newest commit of the file's history whose parent pinned something else, and
        whether that commit created the file."""
        commits = await gh.getitem(
            f"/repos/{full_name}/commits?path={quote(row.path, safe='/')}&per_page={WALK_DEPTH}")
        chosen: dict[str, Any] | None = None
        added = False
        for commit in commits or []:
            chosen = commit
            parents = [str(p["sha"]) for p in commit.get("parents") or []]
            before = await _text_at(gh, files, full_name, parents[0], row.path) if parents else None
            if before is None:
                added = True
                break
            if _ref_in(before, row) != row.ref:
                break
        if chosen is None:
            return UNKNOWN, False
        sha = str(chosen["sha"])
        dates = chosen.get("commit") or {}
        stamp = (dates.get("committer") or {}).get("date") or (
            dates.get("author") or {}).get("date")
        pull = await self._merged_by(gh, full_name, sha)
        return Since(_when(str(stamp)) if stamp else None, sha,
                     str(chosen.get("html_url") or _commit_url(ctx, full_name, sha)),
                     pull[0] if pull else None, pull[1] if pull else None), added

    async def _merged_by(self, gh: GitHubAPI, full_name: str, sha: str) -> tuple[int, str] | None:
        """The pull request whose merge made the commit, if one did (a commit never changes)."""
        key = (full_name.lower(), sha)
        if key in self._by_commit:
            return self._by_commit[key]
        pulls = await or_none(gh.getitem(f"/repos/{full_name}/commits/{sha}/pulls"), 404, 422)
        merged = [pr for pr in pulls or []
                  if pr.get("merged_at") or pr.get("merge_commit_sha") == sha]
        found = (int(merged[0]["number"]), str(merged[0].get("html_url") or "")) if merged \
            else None
        self._by_commit[key] = found
        return found


async def _text_at(gh: GitHubAPI, files: RepoFiles, full_name: str, commit: str, path: str
                   ) -> str | None:
    """A file's text at a commit: from the snapshot's kept trees and blobs when they have it
    (the commit before a push usually is the head read last time), else one read."""
    known, text = files.known_text(full_name, commit, path)
    if known:
        return text
    found = await get_file(gh, full_name, path, ref=commit)
    return found.text if found is not None else None


def ref_of(text: str, image: str, path: str, tag_key: str | None = None) -> Ref:
    """(tag, digest) of the first reference to `image` in a file's text."""
    try:
        found = find_images(text, image, path=path, tag_key=tag_key)
    except ManifestError:
        return None, None
    return (found[0].tag, found[0].digest) if found else (None, None)


def _ref_in(text: str, row: Wanted) -> Ref:
    return ref_of(text, row.image, row.path, row.tag_key)


def _latest_matching(candidates: list[MergedPromotion] | None, ref: Ref
                     ) -> MergedPromotion | None:
    tag, digest = ref
    for promotion in candidates or []:
        if digest is not None and promotion.digest == digest:
            return promotion
        if digest is None and tag is not None and tag in (promotion.tag, promotion.version):
            return promotion
    return None


def opened_by_app(ctx: Context, pr: dict[str, Any]) -> bool:
    """Opened by this app from a branch of the repository itself: anyone can copy a marker
    into a PR body or name a branch `conveyor/...`, so neither alone makes a PR Conveyor's."""
    author = str((pr.get("user") or {}).get("login") or "")
    head_repo = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    base_repo = ((pr.get("base") or {}).get("repo") or {}).get("full_name")
    return bool(ctx.bot_login) and author.lower() == ctx.bot_login.lower() and (
        head_repo is None or head_repo == base_repo)


async def _page(gh: GitHubAPI, url: str) -> tuple[list[dict[str, Any]], str | None]:
    """One page of a list and the next page's URL (gidgethub's conditional cache applies)."""
    data, more, _ = await gh._make_request("GET", url, {}, b"", "application/vnd.github+json")
    return (list(data) if isinstance(data, list) else []), more


def _commit_url(ctx: Context, full_name: str, sha: str | None) -> str | None:
    return f"{ctx.web_url}/{full_name}/commit/{sha}" if sha else None


def _when(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
