"""What runs where in one deployment repository: per service and environment, the version and
digest its file pins, since when, the pull request that put it there, and open promotions.

Read from GitHub alone (the default branch, its history and the open pull requests), so the
`/status` command, the dashboard issue and the resync all show the same truth.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

from ..github.repos import FileTooLarge, get_file
from ..manifests import ManifestError, find_images
from .marker import branch_prefix, parse_marker
from .opener import open_pulls
from .policies import DeploymentRepo

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

NONE = "—"

# What a file said at a given blob: its text (or why it has none) and its last change. A
# refresh reads the branch's tree once and only re-reads the files whose blob changed, so a
# policy of hundreds of services costs a handful of requests per refresh, not two per file.
_by_blob: cachetools.LRUCache[tuple[str, str, str], tuple[str | None, str | None, _Since]] = (
    cachetools.LRUCache(maxsize=20_000))
# The package page of each digest, once found.
_package_urls: cachetools.LRUCache[tuple[str, str], str] = cachetools.LRUCache(maxsize=20_000)


@dataclass(frozen=True)
class OpenPromotion:
    number: int
    url: str
    version: str | None
    rollback: bool = False
    train: str | None = None  # the group, for a release train


@dataclass(frozen=True)
class StatusRow:
    service: str
    environment: str
    path: str
    version: str | None = None  # the image tag written in the file
    digest: str | None = None
    package_url: str | None = None  # the package version page of the digest, when known
    since: datetime | None = None  # date of the last commit that changed the file
    since_commit: str | None = None
    since_url: str | None = None
    pull_number: int | None = None  # the pull request that merged that commit
    pull_url: str | None = None
    open_pulls: tuple[OpenPromotion, ...] = ()
    problem: str | None = None  # why the file tells nothing (missing, unreadable, no image)


@dataclass(frozen=True)
class _Since:
    when: datetime | None
    sha: str | None
    url: str | None
    pull_number: int | None
    pull_url: str | None


def rollback_prefix(environment: str, service: str) -> str:
    return f"conveyor/rollback/{environment}/{service}-"


def open_promotions_for(pulls: Iterable[dict[str, Any]], environment: str, service: str
                        ) -> tuple[OpenPromotion, ...]:
    """Open promotion and rollback PRs of (service, environment), found by their branch, and
    the open release trains into the environment that move the service."""
    forward, back = branch_prefix(environment, service), rollback_prefix(environment, service)
    trains = (f"conveyor/{environment}/train-", f"conveyor/rollback/{environment}/train-")
    found = []
    for pr in pulls:
        ref = str((pr.get("head") or {}).get("ref") or "")
        if not ref.startswith((forward, back, *trains)):
            continue
        marker = parse_marker(pr.get("body"))
        if ref.startswith(trains) and marker is not None and marker.is_train:
            member = next((m for m in marker.members if m.service == service), None)
            if member is not None:
                found.append(OpenPromotion(
                    number=int(pr["number"]), url=str(pr.get("html_url") or ""),
                    version=member.version, rollback=ref.startswith(trains[1]),
                    train=marker.group,
                ))
            continue
        if not ref.startswith((forward, back)):
            continue
        found.append(OpenPromotion(
            number=int(pr["number"]), url=str(pr.get("html_url") or ""),
            version=marker.version if marker else None, rollback=ref.startswith(back),
        ))
    return tuple(sorted(found, key=lambda p: p.number))


async def collect_status(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo) -> list[StatusRow]:
    """One row per service × environment, services and environments in policy order."""
    policy = repo.policy
    if policy is None:
        return []
    pulls = await open_pulls(gh, repo.full_name)
    blobs = await _blob_shas(gh, repo)
    files: dict[str, tuple[str | None, str | None]] = {}  # path → (text, problem)
    history: dict[str, _Since] = {}
    merged_by: dict[str, tuple[int, str] | None] = {}  # commit sha → (PR number, url)
    rows: list[StatusRow] = []
    for service in policy.services.values():
        for environment in policy.environments:
            path = policy.path_for(service.name, environment)
            if path not in files:
                await _load(ctx, gh, repo, path, blobs.get(path), files, history, merged_by)
            text, problem = files[path]
            version = digest = None
            if text is not None:
                try:
                    found = find_images(text, service.image, path=path,
                                        tag_key=service.tag_key)
                except ManifestError as exc:
                    found, problem = [], f"`{path}`: {exc}"
                if found:
                    version, digest = found[0].tag, found[0].digest
                elif problem is None:
                    problem = f"{service.image} not found in `{path}`"
            since = history.get(path) or _Since(None, None, None, None, None)
            rows.append(StatusRow(
                service=service.name, environment=environment, path=path, version=version,
                digest=digest,
                package_url=await _package_url(ctx, gh, service.image, digest) if digest
                else None,
                since=since.when, since_commit=since.sha, since_url=since.url,
                pull_number=since.pull_number, pull_url=since.pull_url,
                open_pulls=open_promotions_for(pulls, environment, service.name),
                problem=problem,
            ))
    return rows


async def _load(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, path: str, blob: str | None,
                files: dict[str, tuple[str | None, str | None]], history: dict[str, _Since],
                merged_by: dict[str, tuple[int, str] | None]) -> None:
    """A file's text and last change, from the blob cache when the file did not change."""
    key = (repo.full_name.lower(), path, blob or "")
    cached = _by_blob.get(key) if blob else None
    if cached is not None:
        files[path], history[path] = (cached[0], cached[1]), cached[2]
        return
    files[path] = await _read(gh, repo, path)
    if files[path][0] is not None:
        history[path] = await _since(ctx, gh, repo.full_name, path, merged_by)
    if blob:
        _by_blob[key] = (*files[path], history.get(path) or _Since(None, None, None, None, None))


async def _blob_shas(gh: GitHubAPI, repo: DeploymentRepo) -> dict[str, str]:
    """path → blob sha of the default branch, in one request (empty when GitHub truncates)."""
    try:
        tree = await gh.getitem(f"/repos/{repo.full_name}/git/trees/"
                                f"{quote(repo.default_branch, safe='')}?recursive=1")
    except gidgethub.BadRequest:
        return {}
    if tree.get("truncated"):
        return {}
    return {str(item["path"]): str(item["sha"]) for item in tree.get("tree") or []
            if item.get("type") == "blob"}


async def _package_url(ctx: Context, gh: GitHubAPI, image: str, digest: str) -> str | None:
    key = (image.lower(), digest)
    if key not in _package_urls:
        for found, url in (await _package_pages(ctx, gh, image)).items():
            _package_urls[(image.lower(), found)] = url
    return _package_urls.get(key)


async def _read(gh: GitHubAPI, repo: DeploymentRepo, path: str) -> tuple[str | None, str | None]:
    try:
        found = await get_file(gh, repo.full_name, path)
    except FileTooLarge as exc:
        return None, str(exc)
    if found is None:
        return None, f"`{path}` does not exist on {repo.default_branch}"
    return found.text, None


async def _package_pages(ctx: Context, gh: GitHubAPI, image: str) -> dict[str, str]:
    try:
        versions = await ctx.packages.versions(gh, image)
    except gidgethub.GitHubException as exc:
        log.info("package versions unavailable", extra={"image": image, "error": str(exc)})
        return {}
    return {version.digest: version.url for version in versions if version.url}


async def _since(ctx: Context, gh: GitHubAPI, repo: str, path: str,
                 merged_by: dict[str, tuple[int, str] | None]) -> _Since:
    """The last commit of the default branch that changed `path`, and the PR that merged it."""
    commits = await gh.getitem(f"/repos/{repo}/commits?path={quote(path, safe='/')}&per_page=1")
    if not commits:
        return _Since(None, None, None, None, None)
    commit = commits[0]
    sha = str(commit["sha"])
    dates = commit.get("commit") or {}
    stamp = (dates.get("committer") or {}).get("date") or (dates.get("author") or {}).get("date")
    when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None
    url = commit.get("html_url") or f"{ctx.web_url}/{repo}/commit/{sha}"
    if sha not in merged_by:
        merged_by[sha] = await _merged_by(gh, repo, sha)
    pull = merged_by[sha]
    return _Since(when, sha, url, pull[0] if pull else None, pull[1] if pull else None)


async def _merged_by(gh: GitHubAPI, repo: str, sha: str) -> tuple[int, str] | None:
    """The pull request whose merge made the commit, if one did."""
    try:
        pulls = await gh.getitem(f"/repos/{repo}/commits/{sha}/pulls")
    except gidgethub.BadRequest as exc:
        if exc.status_code not in (404, 422):
            raise
        return None
    merged = [pr for pr in pulls or [] if pr.get("merged_at") or pr.get("merge_commit_sha") == sha]
    return (int(merged[0]["number"]), str(merged[0].get("html_url") or "")) if merged else None


def short_digest(digest: str | None) -> str:
    return digest.removeprefix("sha256:")[:12] if digest else NONE


def _cell_version(row: StatusRow) -> str:
    return f"`{row.version}`" if row.version else NONE


def _cell_digest(row: StatusRow) -> str:
    if not row.digest:
        return NONE
    text = f"`{short_digest(row.digest)}`"
    return f"[{text}]({row.package_url})" if row.package_url else text


def _cell_since(row: StatusRow) -> str:
    if row.since is None:
        return NONE
    text = row.since.strftime("%Y-%m-%d %H:%M UTC")
    return f"[{text}]({row.since_url})" if row.since_url else text


def _cell_pull(row: StatusRow) -> str:
    return f"#{row.pull_number}" if row.pull_number else NONE


def _cell_open(row: StatusRow) -> str:
    if not row.open_pulls:
        return NONE
    parts = []
    for pr in row.open_pulls:
        what = f" `{pr.version}`" if pr.version else ""
        kind = [*(["rollback"] if pr.rollback else []), *([f"train {pr.train}"] if pr.train
                                                            else [])]
        parts.append(f"#{pr.number}{what}" + (f" ({', '.join(kind)})" if kind else ""))
    return ", ".join(parts)


def render_status(rows: Sequence[StatusRow], service: str | None = None) -> str:
    """Markdown: one table per service (or only `service`), environments in policy order."""
    if service is not None:
        rows = [row for row in rows if row.service.lower() == service.lower()]
        if not rows:
            return f"No service named `{service}` in this repository's policy."
    if not rows:
        return "No services are configured in this repository's policy."
    sections: list[str] = []
    for name in dict.fromkeys(row.service for row in rows):
        lines = [
            f"### {name}",
            "",
            "| environment | version | digest | since | merged in | open promotions |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        notes = []
        for row in (r for r in rows if r.service == name):
            lines.append(f"| {row.environment} | {_cell_version(row)} | {_cell_digest(row)} "
                         f"| {_cell_since(row)} | {_cell_pull(row)} | {_cell_open(row)} |")
            if row.problem:
                notes.append(f"> {row.environment}: {row.problem}")
        if notes:
            lines += ["", *notes]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)
