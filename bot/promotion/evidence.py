"""Evidence from an upstream environment that a digest proved itself there.

`merged`: the default branch set the upstream file to the digest (Conveyor's merged promotion
PR, or the file as it stands). `deployed`: a successful GitHub deployment, commit status or check
run for the upstream environment on a deployment-repo commit at which the upstream file pins
the digest. `history`: for rollbacks, the digest was live in the environment before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from ..domain.gate import Evidence
from ..domain.policy import Environment, Policy
from ..github.repos import get_file
from ..manifests import ManifestError, find_images
from .marker import branch_name
from .opener import find_pull_for_branch

# Bounds: how far back the history is read.
MAX_RANGE_COMMITS = 30
MAX_STATUS_COMMITS = 10
MAX_HISTORY_COMMITS = 30


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def pins(text: str | None, image: str, digest: str, path: str) -> bool:
    if text is None:
        return False
    try:
        return any(o.digest == digest for o in find_images(text, image, path=path))
    except ManifestError:
        return False


@dataclass
class EvidenceFinder:
    gh: GitHubAPI
    repo: str
    default_branch: str
    policy: Policy
    web_url: str

    async def for_digest(self, service: str, environment: Environment, digest: str
                         ) -> list[Evidence]:
        upstream = environment.after
        if upstream is None:
            return []
        image = self.policy.services[service].image
        path = self.policy.path_for(service, upstream)
        found: list[Evidence] = []
        setting = await self._merged(service, upstream, image, path, digest)
        if setting is not None:
            found.append(setting[0])
            if "deployed" in environment.evidence:
                found += await self._deployed(upstream, environment.deployed_context, image,
                                              path, digest, setting[1])
        return found

    async def _merged(self, service: str, upstream: str, image: str, path: str, digest: str
                      ) -> tuple[Evidence, str] | None:
        """Merged evidence and the sha of the commit that set the digest upstream."""
        pr = await find_pull_for_branch(self.gh, self.repo,
                                        branch_name(upstream, service, digest))
        if pr is not None and pr.get("merged_at") and pr.get("merge_commit_sha"):
            return Evidence(
                kind="merged", digest=digest, at=parse_time(pr["merged_at"]),
                url=pr["html_url"], description=f"#{pr['number']} merged into {upstream}",
                environment=upstream,
            ), str(pr["merge_commit_sha"])
        current = await get_file(self.gh, self.repo, path)
        if not pins(current.text if current else None, image, digest, path):
            return None
        commits = await self.gh.getitem(
            f"/repos/{self.repo}/commits?sha={quote(self.default_branch)}"
            f"&path={quote(path)}&per_page=1"
        )
        if not commits:
            return None
        commit = commits[0]
        return Evidence(
            kind="merged", digest=digest,
            at=parse_time(commit["commit"]["committer"]["date"]),
            url=commit["html_url"],
            description=f"{path} pins it on {self.default_branch} ({commit['sha'][:7]})",
            environment=upstream,
        ), str(commit["sha"])

    async def _range(self, path: str, image: str, digest: str, setting_sha: str
                     ) -> list[dict[str, Any]]:
        """Commits of the default branch, oldest first, at which the upstream file pins the
        digest: from the commit that set it up to the next change of the file."""
        commits = [c async for c in _limited(self.gh.getiter(
            f"/repos/{self.repo}/commits?sha={quote(self.default_branch)}&per_page=100"
        ), 100)]
        shas = [c["sha"] for c in commits]
        if setting_sha not in shas:
            return []
        window = list(reversed(commits[: shas.index(setting_sha) + 1]))[:MAX_RANGE_COMMITS]
        in_range = []
        for commit in window:
            if commit["sha"] != setting_sha:
                text = await get_file(self.gh, self.repo, path, commit["sha"])
                if not pins(text.text if text else None, image, digest, path):
                    break
            in_range.append(commit)
        return in_range

    async def _deployed(self, upstream: str, context: str | None, image: str, path: str,
                        digest: str, setting_sha: str) -> list[Evidence]:
        in_range = await self._range(path, image, digest, setting_sha)
        shas = [c["sha"] for c in in_range]
        found: list[Evidence] = []
        deployments = await self.gh.getitem(
            f"/repos/{self.repo}/deployments?environment={quote(upstream)}&per_page=30"
        )
        for deployment in sorted(deployments, key=lambda d: d["created_at"]):
            payload = deployment.get("payload") if isinstance(deployment.get("payload"), dict) \
                else {}
            if deployment["sha"] not in shas and payload.get("digest") != digest:
                continue
            statuses = await self.gh.getitem(
                f"/repos/{self.repo}/deployments/{deployment['id']}/statuses?per_page=1"
            )
            if statuses and statuses[0]["state"] == "success":
                found.append(Evidence(
                    kind="deployed", digest=digest, at=parse_time(statuses[0]["created_at"]),
                    url=statuses[0].get("log_url") or deployment["url"],
                    description=f"deployment {deployment['id']} to {upstream} succeeded",
                    environment=upstream,
                ))
                return found
        if context:
            for sha in shas[:MAX_STATUS_COMMITS]:
                evidence = await self._context_success(sha, context, digest, upstream)
                if evidence is not None:
                    return [evidence]
        return found

    async def _context_success(self, sha: str, context: str, digest: str, upstream: str
                               ) -> Evidence | None:
        combined = await self.gh.getitem(f"/repos/{self.repo}/commits/{sha}/status")
        for status in combined.get("statuses") or []:
            if status.get("context") == context and status.get("state") == "success":
                return Evidence(
                    kind="deployed", digest=digest, at=parse_time(status["updated_at"]),
                    url=status.get("target_url") or f"{self.web_url}/{self.repo}/commit/{sha}",
                    description=f"{context} reported success on {sha[:7]}",
                    environment=upstream,
                )
        runs = await self.gh.getitem(
            f"/repos/{self.repo}/commits/{sha}/check-runs?check_name={quote(context)}"
        )
        for run in runs.get("check_runs") or []:
            if run.get("conclusion") == "success" and run.get("completed_at"):
                return Evidence(
                    kind="deployed", digest=digest, at=parse_time(run["completed_at"]),
                    url=run.get("html_url") or "", description=f"{context} passed on {sha[:7]}",
                    environment=upstream,
                )
        return None

    async def history(self, service: str, environment: str, digest: str) -> list[Evidence]:
        """When the digest was live in this environment before (rollback evidence)."""
        image = self.policy.services[service].image
        path = self.policy.path_for(service, environment)
        commits = await self.gh.getitem(
            f"/repos/{self.repo}/commits?sha={quote(self.default_branch)}&path={quote(path)}"
            f"&per_page={MAX_HISTORY_COMMITS}"
        )
        for commit in commits:
            text = await get_file(self.gh, self.repo, path, commit["sha"])
            if pins(text.text if text else None, image, digest, path):
                return [Evidence(
                    kind="history", digest=digest,
                    at=parse_time(commit["commit"]["committer"]["date"]),
                    url=commit["html_url"],
                    description=f"it ran in {environment} from {commit['sha'][:7]}",
                    environment=environment,
                )]
        return []


async def _limited(iterator: Any, limit: int) -> Any:
    count = 0
    async for item in iterator:
        yield item
        count += 1
        if count >= limit:
            return
