"""Evidence from an upstream environment that a digest proved itself there.

`merged`: a commit in the default branch's history of the upstream file set it to the image's
full name and digest (branch names and markers play no part). `deployed`: a successful GitHub
deployment, commit status or check run for the upstream environment on a deployment-repo commit
at which the upstream file pins the digest. `history`: for rollbacks, the digest was live in the
environment before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.deployed import Trust
from bot.domain.gate.model import Evidence, FailureMark
from bot.domain.images import canonical_image_name
from bot.domain.policy import Environment, Policy
from bot.github.repos import get_file
from bot.manifests import ManifestError
from bot.manifests.charts import VERSION_ONLY_SHAPES
from bot.manifests.references import deploy_references
from bot.promotion.authorship.trust import written_digest
from bot.promotion.evidence.deployed import DeployedSearch, Target, parse_time
from bot.promotion.evidence.failure_mark import find_mark
from bot.text import short_digest

# Bounds: how far back the history is read.
MAX_HISTORY_COMMITS = 30


def pins(text: str | None, image: str, digest: str, path: str,
         tag_keys: tuple[str, ...] = (), *, version: str | None = None) -> bool:
    """Whether the file deploys ``image`` (its full name) at exactly ``digest`` — or, given
    a chart's ``version``, names that version in a place that holds no digest (whose digest
    the caller must establish otherwise)."""
    if text is None:
        return False
    try:
        wanted = canonical_image_name(image)
        return any(r.canonical_name == wanted and (
            r.digest == digest or (version is not None and r.digest is None
                                   and r.tag == version and r.shape in VERSION_ONLY_SHAPES))
            for r in deploy_references(text, path=path, tag_keys=tag_keys))
    except (ManifestError, ValueError):
        return False


@dataclass
class EvidenceFinder:
    gh: GitHubAPI
    full_name: str
    default_branch: str
    policy: Policy
    web_url: str
    own_login: str = ""
    own_app_id: int | None = None
    # what the deployed search found besides evidence (the latest failure, ignored reports)
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # by digest: why an upstream that names the chart's version alone is no merged evidence
    chart_notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # by digest: Conveyor's marks that the digest was reported failing upstream (on_failure)
    failures: dict[str, list[FailureMark]] = field(default_factory=dict)

    async def for_digest(self, service: str, environment: Environment, digest: str, *,
                         image: str | None = None, version: str | None = None
                         ) -> list[Evidence]:
        """Evidence that ``image`` (default: the service's) at ``digest`` passed in each
        upstream of ``environment``: the upstream file of the same service, on the default
        branch, pinned it (and the reports ``evidence`` asks for). ``version``: the chart
        version the change writes, for upstream files that name a chart by version alone."""
        chart_version = version if self.policy.services[service].is_chart else None
        found: list[Evidence] = []
        for upstream in environment.after:
            found += await self._from_upstream(service, environment, upstream, digest,
                                               image or self.policy.services[service].image,
                                               chart_version)
        if found:  # without evidence the gate fails anyway: no need to read further up
            await self._failure_marks_further_up(service, environment,
                                                 image or self.policy.services[service].image,
                                                 digest)
        return found

    async def _from_upstream(self, service: str, environment: Environment, upstream: str,
                             digest: str, image: str, version: str | None) -> list[Evidence]:
        path = self.policy.path_for(service, upstream)
        tag_keys = self._tag_keys(service)

        async def pinned_at(sha: str) -> bool:
            file = await get_file(self.gh, self.full_name, path, sha)
            return pins(file.text if file else None, image, digest, path, tag_keys,
                        version=version)

        search = DeployedSearch(self.gh, self.full_name, self.default_branch, pinned_at)
        target = Target(service, upstream, path, environment.deployed_context)
        stretch = await search.pinning_commits(target)
        if not stretch:
            return []
        if version is not None and not await self._chart_ran(
                stretch[-1], service, upstream, path, image, digest, version):
            return []
        # The oldest commit of the stretch is the one that brought the digest to the branch.
        found = [await self._merged(stretch[-1], upstream, path, image, digest)]
        if self.policy.environments[upstream].on_failure is not None:
            await self._failure_mark(stretch[-1]["sha"], service, upstream, digest)
        if "deployed" in environment.evidence:
            deployed, notes = await self._deployed(search, target, environment, digest)
            found += deployed
            if notes:
                self.notes[digest] = (*self.notes.get(digest, ()), *notes)
        return found

    async def _chart_ran(self, commit: dict[str, Any], service: str, upstream: str, path: str,
                         image: str, digest: str, version: str) -> bool:
        """Whether the upstream took ``digest`` when the commit brought the chart's version
        in. A file that names the version alone holds no digest: Conveyor's own promotion
        commit (its trailers, which nobody else can write) says which digest it wrote; a tag
        pushed again since then resolves to another digest and is no evidence."""
        file = await get_file(self.gh, self.full_name, path, str(commit["sha"]))
        if pins(file.text if file else None, image, digest, path):
            return True  # the upstream place holds the digest itself
        ran = await written_digest(self.gh, self.full_name, str(commit["sha"]), service, upstream,
                                   self.own_login)
        if ran == digest:
            return True
        how = (f"as {short_digest(ran)}" if ran else
               "in a commit Conveyor did not promote, so which chart it ran is not known")
        note = (f"{upstream} took {version} {how}; {version} resolves to "
                f"{short_digest(digest)} now")
        self.chart_notes[digest] = (*self.chart_notes.get(digest, ()), note)
        return False

    async def _failure_mark(self, sha: str, service: str, environment: str,
                            digest: str) -> None:
        """Record Conveyor's failure mark for the digest in `environment`, if the commit that
        brought the digest there carries one."""
        mark = await find_mark(self.gh, self.full_name, sha, service, environment, digest,
                               own_app_id=self.own_app_id, own_login=self.own_login)
        failure = mark.as_failure() if mark is not None else None
        if failure is not None:
            self.failures.setdefault(digest, []).append(failure)

    async def _failure_marks_further_up(self, service: str, environment: Environment,
                                        image: str, digest: str) -> None:
        """A digest reported failing in any environment before ``environment`` blocks it, not
        only in its direct upstreams: the marks of the watched environments further up."""
        further = [name for name in self.policy.ancestors(environment.name)
                   if name not in environment.after]
        await self.find_failure_marks(service, further, image, digest)

    async def find_failure_marks(self, service: str, environments: Iterable[str], image: str,
                                 digest: str) -> list[FailureMark]:
        """Conveyor's standing marks of ``digest`` in those of ``environments`` that are
        watched (``on_failure``); they are kept in ``failures`` too."""
        tag_keys = self._tag_keys(service)
        before = len(self.failures.get(digest, ()))
        for name in environments:
            if self.policy.environments[name].on_failure is None:
                continue
            path = self.policy.path_for(service, name)

            async def pinned_at(sha: str, path: str = path) -> bool:
                file = await get_file(self.gh, self.full_name, path, sha)
                return pins(file.text if file else None, image, digest, path, tag_keys)

            search = DeployedSearch(self.gh, self.full_name, self.default_branch, pinned_at)
            stretch = await search.pinning_commits(Target(service, name, path, None))
            if stretch:
                await self._failure_mark(stretch[-1]["sha"], service, name, digest)
        return self.failures.get(digest, [])[before:]

    async def _merged(self, commit: dict[str, Any], upstream: str, path: str, image: str,
                      digest: str) -> Evidence:
        """`merged`: the commit of the default branch's history of the upstream file that set
        it to this full name and digest (never a branch name or a marker)."""
        at, how = await self._arrival(commit)
        return Evidence(
            kind="merged", digest=digest, at=at, url=commit["html_url"],
            description=f"{path} pins {image}@{short_digest(digest)} on {self.default_branch} "
                        f"since {commit['sha'][:7]}{how}",
            environment=upstream,
        )

    async def _arrival(self, commit: dict[str, Any]) -> tuple[datetime, str]:
        """When a commit reached the default branch. A commit GitHub itself made (a squash or
        a merge, an API write: committed and signed by GitHub) carries a date GitHub set; any
        other commit's dates are whatever its author wrote, so the merge of its pull request
        dates it instead."""
        data = commit.get("commit") or {}
        committed = parse_time(data["committer"]["date"])
        signed = (data.get("verification") or {}).get("verified") is True
        if signed and (commit.get("committer") or {}).get("login") == "web-flow":
            return committed, ""
        pulls = await self.gh.getitem(f"/repos/{self.full_name}/commits/{commit['sha']}/pulls")
        merged = [parse_time(pr["merged_at"]) for pr in pulls or []
                  if pr.get("merged_at") and pr.get("base", {}).get("ref") == self.default_branch]
        if merged:
            return min(merged), " (dated by the merge of its pull request)"
        return committed, ""

    async def _deployed(self, search: DeployedSearch, target: Target,
                        environment: Environment, digest: str
                        ) -> tuple[list[Evidence], tuple[str, ...]]:
        judgement = await search.judge(target, Trust(
            environment.deployed_by, self.own_login, self.own_app_id))
        report = judgement.evidence
        if report is None:
            return [], judgement.notes()
        return [Evidence(
            kind="deployed", digest=digest, at=report.at,
            url=report.url or f"{self.web_url}/{self.full_name}/commit/{report.sha}",
            description=report.describe(), environment=target.environment,
        )], judgement.notes()

    def _tag_keys(self, service: str) -> tuple[str, ...]:
        tag_key = self.policy.services[service].tag_key
        return (tag_key,) if tag_key else ()

    async def history(self, service: str, environment: str, digest: str, *,
                      image: str | None = None, version: str | None = None
                      ) -> list[Evidence]:
        """When the digest was live in this environment before (rollback evidence). A chart
        named by ``version`` alone ran as ``digest`` where Conveyor's promotion wrote it."""
        image = image or self.policy.services[service].image
        version = version if self.policy.services[service].is_chart else None
        path = self.policy.path_for(service, environment)
        commits = await self.gh.getitem(
            f"/repos/{self.full_name}/commits?sha={quote(self.default_branch)}&path={quote(path)}"
            f"&per_page={MAX_HISTORY_COMMITS}"
        )
        for commit in commits:
            text = await get_file(self.gh, self.full_name, path, commit["sha"])
            held = text.text if text else None
            if pins(held, image, digest, path, self._tag_keys(service)) or (
                    version is not None and pins(held, image, digest, path, version=version)
                    and await written_digest(self.gh, self.full_name, str(commit["sha"]), service,
                                             environment, self.own_login) == digest):
                return [Evidence(
                    kind="history", digest=digest,
                    at=parse_time(commit["commit"]["committer"]["date"]),
                    url=commit["html_url"],
                    description=f"it ran in {environment} from {commit['sha'][:7]}",
                    environment=environment,
                )]
        return []


