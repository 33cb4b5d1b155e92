"""The search for `deployed` evidence in the deployment repository.

Which commits: every default-branch commit at which the upstream file pins the digest, from the
commit that set it up to the commit that replaced it, or the branch head while it still stands,
however many commits later the report came (the file's own history says where it changed).
Which reports: every page of each commit's commit statuses, its check runs (by name when the
context has no wildcard) and its deployments. A deployment speaks about the commit it deploys,
never about what its payload names: anyone who may write to the repository can create one for
any commit with any payload, and a trusted notifier (Argo CD reuses the first deployment listed
for a revision) may then report on it. Every list is bounded, and every request is conditional
(the client's ETag cache), so an unchanged repository answers with ``304``s.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.deployed import (
    Judgement,
    Report,
    Trust,
    check_run_state,
    context_pattern,
    deployment_state,
    judge,
)

# Bounds of one search.
MAX_FILE_HISTORY = 300  # commits touching the upstream file
MAX_RANGE_COMMITS = 300  # default-branch commits searched for reports
MAX_REPORTS_PER_LIST = 1000  # statuses, check runs or deployments of one commit (10 pages)
PARALLEL_COMMITS = 4  # commits whose reports are read at the same time


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Target:
    """What the reports are about: one service's file in one environment, and how its
    reports are named."""

    service: str
    environment: str
    path: str
    context: str | None  # the deployed_context template

    def matches(self, kind: str, name: str) -> bool:
        if kind == "deployment" and name == self.environment:
            return True
        if self.context is None:
            return False
        return context_pattern(self.context, self.service, self.environment).fullmatch(
            name) is not None

    @property
    def exact_name(self) -> str | None:
        """The one check-run name the context can mean, when it has no wildcard."""
        if self.context is None or "*" in self.context:
            return None
        return self.context.replace("{service}", self.service).replace(
            "{env}", self.environment).replace("{{", "{").replace("}}", "}")


@dataclass
class DeployedSearch:
    gh: GitHubAPI
    full_name: str
    default_branch: str
    # whether the target's file pins the digest at a commit
    pinned_at: Callable[[str], Awaitable[bool]]
    _stretches: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    async def judge(self, target: Target, trust: Trust) -> Judgement:
        return judge(await self.reports(target), trust)

    async def reports(self, target: Target) -> list[Report]:
        """Every report about the target on the commits of the digest's newest stretch (the
        commits where ``pinned_at``)."""
        commits = await self.pinning_commits(target)
        if not commits:
            return []
        shas = [commit["sha"] for commit in commits]
        # Each commit's three lists are independent reads: a few at a time, not one by one.
        limit = asyncio.Semaphore(PARALLEL_COMMITS)

        async def reports_on(sha: str) -> list[Report]:
            async with limit:
                return await self._statuses(sha, target) + await self._check_runs(
                    sha, target) + await self._deployments_on(sha, target)

        return [report for found in await asyncio.gather(*(reports_on(sha) for sha in shas))
                for report in found]

    async def pinning_commits(self, target: Target) -> list[dict[str, Any]]:
        """:meth:`_pinning_commits`, read once per search (`merged` evidence shares it)."""
        if target.path not in self._stretches:
            self._stretches[target.path] = await self._pinning_commits(target)
        return self._stretches[target.path]

    async def _pinning_commits(self, target: Target) -> list[dict[str, Any]]:
        """The default branch's own commits (its first-parent chain), newest first, in the
        newest stretch during which the target's file pins the digest.

        The file can only change at a commit that touches it — listed by the file's history —
        or at a merge commit: git's history of a file names the merged branch's commit, not the
        merge that brought it in. So the file is read only at those commits (a commit's text is
        cached for good); every commit in between has the file of the next older one."""
        touching: set[str] = set()
        async for commit in _bounded(self.gh.getiter(
            f"/repos/{self.full_name}/commits?sha={quote(self.default_branch)}"
            f"&path={quote(target.path)}&per_page=100"
        ), MAX_FILE_HISTORY):
            touching.add(commit["sha"])
        complete = len(touching) < MAX_FILE_HISTORY  # else read the file at every commit
        stretch: list[dict[str, Any]] = []
        since_change: list[dict[str, Any]] = []
        expected: str | None = None
        async for commit in _bounded(self.gh.getiter(
            f"/repos/{self.full_name}/commits?sha={quote(self.default_branch)}&per_page=100"
        ), MAX_RANGE_COMMITS):
            if expected is not None and commit["sha"] != expected:
                continue  # a commit of a merged branch, not of the default branch itself
            parents = commit.get("parents") or []
            expected = parents[0]["sha"] if parents else None
            since_change.append(commit)
            if complete and commit["sha"] not in touching and len(parents) == 1:
                continue
            if await self.pinned_at(commit["sha"]):
                stretch += since_change
            elif stretch:
                break  # the commit before the digest was set
            since_change = []
            if expected is None:
                break
        return stretch

    async def _statuses(self, sha: str, target: Target) -> list[Report]:
        if target.context is None:
            return []
        found = []
        async for status in _bounded(self.gh.getiter(
            f"/repos/{self.full_name}/commits/{sha}/statuses?per_page=100"
        ), MAX_REPORTS_PER_LIST):
            context = str(status.get("context") or "")
            if not target.matches("status", context):
                continue
            found.append(Report(
                kind="status", name=context, state=str(status.get("state") or "pending"),
                at=parse_time(status.get("updated_at") or status["created_at"]),
                reporter=(status.get("creator") or {}).get("login", ""), sha=sha,
                url=status.get("target_url") or "", order=int(status.get("id") or 0),
            ))
        return found

    async def _check_runs(self, sha: str, target: Target) -> list[Report]:
        if target.context is None:
            return []
        name = target.exact_name
        query = f"check_name={quote(name)}&" if name is not None else ""
        found = []
        async for run in _bounded(self.gh.getiter(
            f"/repos/{self.full_name}/commits/{sha}/check-runs?{query}filter=all&per_page=100",
            iterable_key="check_runs",
        ), MAX_REPORTS_PER_LIST):
            if not target.matches("check_run", str(run.get("name") or "")):
                continue
            app = run.get("app") or {}
            at = run.get("completed_at") or run.get("started_at")
            if not at:
                continue
            found.append(Report(
                kind="check_run", name=str(run["name"]),
                state=check_run_state(run.get("status"), run.get("conclusion")),
                at=parse_time(at), reporter=f"{app.get('slug', '')}[bot]", sha=sha,
                url=run.get("html_url") or "", app_id=app.get("id"),
                order=int(run.get("id") or 0),
            ))
        return found

    async def _deployments_on(self, sha: str, target: Target) -> list[Report]:
        found: list[Report] = []
        async for deployment in _bounded(self.gh.getiter(
            f"/repos/{self.full_name}/deployments?sha={sha}&per_page=100"
        ), MAX_REPORTS_PER_LIST):
            if target.matches("deployment", str(deployment.get("environment") or "")):
                found += await self._deployment_statuses(deployment, sha, target)
        return found

    async def _deployment_statuses(self, deployment: dict[str, Any], sha: str, target: Target
                                   ) -> list[Report]:
        found = []
        async for status in _bounded(self.gh.getiter(
            f"/repos/{self.full_name}/deployments/{deployment['id']}/statuses?per_page=100"
        ), MAX_REPORTS_PER_LIST):
            app = status.get("performed_via_github_app") or {}
            found.append(Report(
                kind="deployment", name=str(deployment.get("environment") or target.environment),
                state=deployment_state(str(status.get("state") or "")),
                at=parse_time(status["created_at"]),
                reporter=(status.get("creator") or {}).get("login", ""), sha=sha,
                url=status.get("log_url") or status.get("target_url") or deployment.get("url", ""),
                app_id=app.get("id"), order=int(status.get("id") or 0),
            ))
        return found


async def _bounded(items: AsyncIterator[Any], limit: int) -> AsyncIterator[Any]:
    count = 0
    async for item in items:
        yield item
        count += 1
        if count >= limit:
            return
