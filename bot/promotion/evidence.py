"""Evidence from an upstream environment that a digest proved itself there.

`merged`: the default branch set the upstream file to the digest (Conveyor's merged promotion
PR, or the file as it stands). `deployed`: a successful GitHub deployment, commit status or check
run for the upstream environment on a deployment-repo commit at which the upstream file pins
the digest. `history`: for rollbacks, the digest was live in the environment before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from ..domain.deployed import Trust
from ..domain.gate import Evidence
from ..domain.policy import Environment, Policy
from ..github.repos import get_file
from ..manifests import ManifestError, find_images
from .deployed import DeployedSearch, Target, parse_time
from .marker import branch_name
from .opener import find_pull_for_branch

# Bounds: how far back the history is read.
MAX_HISTORY_COMMITS = 30


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
    own_login: str = ""
    own_app_id: int | None = None
    # what the deployed search found besides evidence (the latest failure, ignored reports)
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)

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
            deployed, notes = await self._deployed(service, environment, image, path, digest)
            found += deployed
            if notes:
                self.notes[digest] = notes
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

    async def _deployed(self, service: str, environment: Environment, image: str, path: str,
                        digest: str) -> tuple[list[Evidence], tuple[str, ...]]:
        upstream = environment.after or environment.name

        async def pinned_at(sha: str) -> bool:
            file = await get_file(self.gh, self.repo, path, sha)
            return pins(file.text if file else None, image, digest, path)

        search = DeployedSearch(self.gh, self.repo, self.default_branch, pinned_at)
        target = Target(service, upstream, path, environment.deployed_context)
        judgement = await search.judge(target, digest, Trust(
            environment.deployed_by, self.own_login, self.own_app_id))
        report = judgement.evidence
        if report is None:
            return [], judgement.notes()
        return [Evidence(
            kind="deployed", digest=digest, at=report.at,
            url=report.url or f"{self.web_url}/{self.repo}/commit/{report.sha}",
            description=report.describe(), environment=upstream,
        )], judgement.notes()

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


