"""What runs where in one deployment repository: per service and environment, the version and
digest its file pins, since when, the pull request that put it there, and open promotions.

Read from GitHub alone (the default branch at one commit, Conveyor's merged promotions, the
files' history and the open pull requests), so the `/status` command, the dashboard issue and
the resync all show the same truth. The cost does not grow with the number of services once
the files have been read: a read asks for the branch head, the open and the recently closed
pull requests (all conditional), and only for what changed (`snapshot`, `history`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import cachetools
from gidgethub.abc import GitHubAPI

from bot.domain.policy import Policy
from bot.domain.promotions.marker import branch_prefix, parse_marker
from bot.github.snapshot import FileAt
from bot.manifests import ManifestError, find_images
from bot.promotion.history.file_history import UNKNOWN, ChangeHistory, Wanted
from bot.promotion.opening.opener import open_pulls
from bot.promotion.policies import DeploymentRepo
from bot.runtime.offload import run_cpu
from bot.text import escape_markdown, format_minute, join_names, short_digest

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

NONE = "—"
Reference = tuple[str | None, str | None, str | None]  # tag, digest, problem
ReferenceKey = tuple[str, str, str, str | None]  # blob, image, path, tag_key


@dataclass(frozen=True)
class OpenPull:
    """An open promotion or train PR as a dashboard row links it."""

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
    since: datetime | None = None  # when the service's reference in the file became this one
    since_commit: str | None = None
    since_url: str | None = None
    pull_number: int | None = None  # the pull request that merged that commit
    pull_url: str | None = None
    open_pulls: tuple[OpenPull, ...] = ()
    problem: str | None = None  # why the file tells nothing (missing, unreadable, no image)


class StatusSources:
    """The status of deployment repositories, and what its reads keep between reads: file
    texts by blob, dates by reference. One per app, sized from the policies being served.
    Package pages come from package events (`ImageLookup.package_page`): GitHub refuses the
    Packages REST API to installation tokens."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.files = ctx.files
        self.history = ChangeHistory()
        self._references: cachetools.LRUCache[ReferenceKey, Reference] = (
            cachetools.LRUCache(maxsize=4096))

    def size_for(self, rows: int) -> None:
        """Room for `rows` service × environment pairs of every repository served."""
        self.files.ensure_capacity(2 * rows)
        self.history.ensure_capacity(2 * rows)
        for name in ("_references",):
            old = getattr(self, name)
            if 2 * rows > old.maxsize:
                grown: cachetools.LRUCache[Any, Any] = cachetools.LRUCache(maxsize=2 * rows)
                grown.update(old)
                setattr(self, name, grown)

    async def references(self, rows: list[tuple[str, str, str, str, str | None, FileAt]]
                         ) -> dict[tuple[str, str], Reference]:
        """(service, environment) → (tag, digest, problem) of each row's file, parsed once
        per blob; parsing many or large files (a cold start) runs off the event loop."""
        out: dict[tuple[str, str], Reference] = {}
        todo: list[tuple[ReferenceKey, str]] = []
        for service, environment, path, image, tag_key, at in rows:
            if at.text is None or at.blob is None:
                out[(service, environment)] = (None, None, at.problem)
                continue
            key = (at.blob, image, path, tag_key)
            if key not in self._references:
                todo.append((key, at.text))
        if todo:
            size = sum(len(text) for _, text in todo)
            self._references.update(await run_cpu(size, _parse_references, todo))
        for service, environment, path, image, tag_key, at in rows:
            if at.text is not None and at.blob is not None:
                out[(service, environment)] = self._references[(at.blob, image, path, tag_key)]
        return out

    async def collect(self, gh: GitHubAPI, repo: DeploymentRepo) -> list[StatusRow]:
        """One row per service × environment, services and environments in policy order."""
        policy = repo.policy
        pairs = [(service, environment) for service in policy.services.values()
                 for environment in policy.environments]
        paths = {(s.name, e): policy.path_for(s.name, e) for s, e in pairs}
        pulls = await open_pulls(gh, repo.full_name)
        snapshot = await self.files.read(gh, repo.full_name, repo.default_branch,
                                         paths.values())
        at = snapshot.files
        found = await self.references([(s.name, e, paths[(s.name, e)], s.image, s.tag_key,
                                        at[paths[(s.name, e)]]) for s, e in pairs])
        wanted = [Wanted(s.name, e, paths[(s.name, e)], s.image, found[(s.name, e)][:2],
                         at[paths[(s.name, e)]].blob, s.tag_key)
                  for s, e in pairs if found[(s.name, e)][0] or found[(s.name, e)][1]]
        dates = await self.history.dates(self.ctx, gh, repo.full_name, wanted, self.files)
        images = self.ctx.images
        rows: list[StatusRow] = []
        for service, environment in pairs:
            version, digest, problem = found[(service.name, environment)]
            since = dates.get((service.name, environment), UNKNOWN)
            rows.append(StatusRow(
                service=service.name, environment=environment,
                path=paths[(service.name, environment)], version=version, digest=digest,
                package_url=images.package_page(service.image, digest) if digest else None,
                since=since.when, since_commit=since.sha, since_url=since.url,
                pull_number=since.pull_number, pull_url=since.pull_url,
                open_pulls=open_promotions_for(pulls, environment, service.name,
                                               self.ctx.bot_login),
                problem=problem,
            ))
        return rows


def open_promotions_for(pulls: Iterable[dict[str, Any]], environment: str, service: str,
                        bot_login: str) -> tuple[OpenPull, ...]:
    """Open promotion and rollback PRs of (service, environment), found by their branch, and
    the open release trains into the environment that move the service. Only the app's own
    PRs (GitHub names their author; a branch name is anyone's to choose); the version shown
    is the body's, which is display only."""
    forward = branch_prefix(environment, service)
    back = branch_prefix(environment, service, rollback=True)
    trains = (f"conveyor/{environment}/train-", f"conveyor/rollback/{environment}/train-")
    found = []
    for pr in pulls:
        ref = str((pr.get("head") or {}).get("ref") or "")
        author = str((pr.get("user") or {}).get("login") or "")
        if not ref.startswith((forward, back, *trains)) or author.lower() != bot_login.lower():
            continue
        marker = parse_marker(pr.get("body"))
        if ref.startswith(trains) and marker is not None and marker.is_train:
            member = next((m for m in marker.members if m.service == service), None)
            if member is not None:
                found.append(OpenPull(
                    number=int(pr["number"]), url=str(pr.get("html_url") or ""),
                    version=member.version, rollback=ref.startswith(trains[1]),
                    train=marker.group,
                ))
            continue
        if not ref.startswith((forward, back)):
            continue
        found.append(OpenPull(
            number=int(pr["number"]), url=str(pr.get("html_url") or ""),
            version=marker.version if marker else None, rollback=ref.startswith(back),
        ))
    return tuple(sorted(found, key=lambda p: p.number))


def _parse_references(todo: list[tuple[ReferenceKey, str]]) -> dict[ReferenceKey, Reference]:
    out: dict[ReferenceKey, Reference] = {}
    for key, text in todo:
        _, image, path, tag_key = key
        try:
            images = find_images(text, image, path=path, tag_key=tag_key)
        except ManifestError as exc:
            out[key] = (None, None, f"`{path}`: {exc}")
            continue
        out[key] = (images[0].tag, images[0].digest, None) if images else (
            None, None, f"{image} not found in `{path}`")
    return out


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
    text = format_minute(row.since)
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


def attestation_lines(policy: Policy, trust: Mapping[str, Any], service: str | None = None
                      ) -> list[str]:
    """What /status says about attestations where the policy asks for them: which
    environments require one, which signer each service pins, and the trusted roots
    (`trust`: what /healthz says of them)."""
    requiring = [env.name for env in policy.environments.values() if env.require_attestation]
    services = [s for s in policy.services.values()
                if service is None or s.name.lower() == service.lower()]
    if not requiring and not any(s.signer_workflow for s in services):
        return []
    roots = ", ".join(f"{name} (refreshed {when[:10]} {when[11:16]} UTC)"
                      for name, when in dict(trust.get("roots") or {}).items())
    lines = ["### Attestations", ""]
    if requiring:
        lines.append(f"Required in {join_names(requiring)}: a promotion needs a verified "
                     "attestation.")
    for settings in services:
        pinned = (f"signed by `{settings.signer_workflow}`" if settings.signer_workflow
                  else f"signed by any workflow of {settings.source} (no signer_workflow)")
        lines.append(f"- {settings.name}: {pinned}")
    lines += ["", f"Trusted Sigstore roots: {roots or 'none'}."]
    if trust.get("problem"):
        lines.append(f"> ⚠️ {escape_markdown(str(trust['problem']))}")
    return lines
