"""The facts of delivery metrics, read from GitHub alone.

- promotions: pull requests Conveyor opened and that merged into the default branch in the
  window (closed pull requests, newest update first, bounded), each service of a release train
  on its own; what they promote (service, environment, digest, source commit, rollback or not)
  comes from the trailers of Conveyor's own commit, never from the body;
- the source commit's time: the commit the trailer names, in the source repository (or, when
  it names none, the commit of the release of the promoted tag);
- reports: the trusted final deployment reports of the environment itself (its own
  `deployed_context` and `deployed_by`, as `on_failure` reads them) on each promotion's merge
  commit, and Conveyor's own failure marks there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from gidgethub.abc import GitHubAPI

from bot.domain.delivery import DeliveredPromotion, Figures, Outage, figures
from bot.domain.deployed import Report, Trust, check_run_state, deployment_state
from bot.domain.policy import Environment, Policy
from bot.github.checks import is_own
from bot.github.repos import commit_for_ref
from bot.promotion.authorship.trust import trusted_pull
from bot.promotion.evidence.deployed import Target, parse_time
from bot.promotion.evidence.failure_mark import MARK_PREFIX
from bot.promotion.triggers.flows import find_release

MAX_PULLS = 1000  # closed pull requests read per report
MAX_REPORTS = 300  # reports of one list read per merge commit
FINAL = ("success", "failure", "error")


@dataclass(frozen=True)
class _Merged:
    service: str
    environment: str
    merged_at: datetime
    source_at: datetime | None
    rollback: bool
    reports: list[Report]
    marked: bool


class DeliveryReader:
    def __init__(self, gh: GitHubAPI, full_name: str, default_branch: str, policy: Policy, *,
                 bot_login: str, app_id: int | None) -> None:
        self.gh = gh
        self.full_name = full_name
        self.default_branch = default_branch
        self.policy = policy
        self.bot_login = bot_login
        self.app_id = app_id
        self._source_times: dict[tuple[str, str], datetime | None] = {}

    async def figures(self, since: datetime, until: datetime) -> list[Figures]:
        """Every service × environment of the policy, in policy order."""
        promotions, outages = await self.read(since, until)
        return [figures(service, env, promotions, outages, since, until)
                for service in self.policy.services for env in self.policy.environments]

    async def read(self, since: datetime, until: datetime
                   ) -> tuple[list[DeliveredPromotion], list[Outage]]:
        merged: list[_Merged] = []
        count = 0
        async for pr in self.gh.getiter(
                f"/repos/{self.full_name}/pulls?state=closed&sort=updated&direction=desc"
                "&per_page=100"):
            count += 1
            if count > MAX_PULLS or parse_time(str(pr["updated_at"])) < since:
                break
            if not pr.get("merged_at") or (pr.get("base") or {}).get("ref") != \
                    self.default_branch:
                continue
            merged_at = parse_time(str(pr["merged_at"]))
            if not since <= merged_at < until:
                continue
            trusted = await trusted_pull(self.gh, self.full_name, pr, self.bot_login)
            if trusted is None or trusted.environment not in self.policy.environments:
                continue
            env = self.policy.environments[trusted.environment]
            source_at = await self._source_time(trusted.source_repo, trusted.source_sha,
                                                trusted.services[0], trusted.tag)
            sha = str(pr.get("merge_commit_sha") or "")
            for service in trusted.services:
                if service not in self.policy.services or not sha:
                    continue
                reports, marked = await self._reports(sha, service, env)
                merged.append(_Merged(service, env.name, merged_at, source_at,
                                      trusted.rollback, reports, marked))
        return [_promotion(item, merged, self.policy) for item in merged], _outages(merged)

    async def _source_time(self, full_name: str | None, sha: str | None, service: str,
                           tag: str | None) -> datetime | None:
        """The source commit's time; a promotion opened from a package event before its
        release was published names no commit, and the release of its tag gives it."""
        if not full_name or not (sha or tag):
            return None
        ref = sha
        if ref is None and tag is not None:
            release = await find_release(self.gh, full_name, service, tag)
            ref = str(release["tag_name"]) if release else None
        if ref is None:
            return None
        if (full_name, ref) not in self._source_times:
            commit = await commit_for_ref(self.gh, full_name, ref)
            date = ((commit or {}).get("commit") or {}).get("committer", {}).get("date")
            self._source_times[full_name, ref] = parse_time(str(date)) if date else None
        return self._source_times[full_name, ref]

    async def _reports(self, sha: str, service: str, env: Environment
                       ) -> tuple[list[Report], bool]:
        """The environment's own trusted final reports about the service on the commit, and
        whether Conveyor marked the service failing there."""
        target = Target(service, env.name, self.policy.path_for(service, env.name),
                        env.deployed_context)
        trust = Trust(env.deployed_by, self.bot_login, self.app_id)
        found: list[Report] = []
        marked = False
        if env.deployed_context is not None:
            statuses = await self.gh.getitem(
                f"/repos/{self.full_name}/commits/{sha}/statuses?per_page=100")
            for status in statuses[:MAX_REPORTS]:
                if target.matches("status", str(status.get("context") or "")):
                    found.append(Report(
                        "status", str(status["context"]), str(status.get("state")),
                        parse_time(status.get("updated_at") or status["created_at"]),
                        (status.get("creator") or {}).get("login", ""), sha,
                        str(status.get("target_url") or ""), order=int(status.get("id") or 0)))
        runs = await self.gh.getitem(
            f"/repos/{self.full_name}/commits/{sha}/check-runs?filter=all&per_page=100")
        for run in (runs.get("check_runs") or [])[:MAX_REPORTS]:
            name = str(run.get("name") or "")
            if name.startswith(MARK_PREFIX) and is_own(run, self.app_id, self.bot_login):
                marked = marked or (name == f"{MARK_PREFIX} ({service} in {env.name})"
                                    and run.get("conclusion") == "failure")
                continue
            at = run.get("completed_at")
            if at and target.matches("check_run", name):
                app = run.get("app") or {}
                found.append(Report(
                    "check_run", name, check_run_state(run.get("status"), run.get("conclusion")),
                    parse_time(at), f"{app.get('slug', '')}[bot]", sha,
                    str(run.get("html_url") or ""), app.get("id"), int(run.get("id") or 0)))
        deployments = await self.gh.getitem(
            f"/repos/{self.full_name}/deployments?sha={sha}&per_page=100")
        for deployment in deployments[:MAX_REPORTS]:
            if not target.matches("deployment", str(deployment.get("environment") or "")):
                continue
            statuses = await self.gh.getitem(
                f"/repos/{self.full_name}/deployments/{deployment['id']}/statuses?per_page=100")
            for status in statuses[:MAX_REPORTS]:
                app = status.get("performed_via_github_app") or {}
                found.append(Report(
                    "deployment", str(deployment["environment"]),
                    deployment_state(str(status.get("state") or "")),
                    parse_time(status["created_at"]),
                    (status.get("creator") or {}).get("login", ""), sha,
                    str(status.get("log_url") or ""), app.get("id"), int(status.get("id") or 0)))
        return [r for r in found if r.state in FINAL and trust.refusal(r) is None], marked


def _promotion(item: _Merged, merged: Sequence[_Merged], policy: Policy) -> DeliveredPromotion:
    """A promotion failed when, within watch of its merge, a failure was reported on its merge
    commit, Conveyor marked it, or a rollback of the same service and environment merged."""
    ends = item.merged_at + policy.environments[item.environment].watch
    failed = item.marked or any(r.state != "success" and item.merged_at <= r.at <= ends
                                for r in item.reports)
    failed = failed or any(
        other.rollback and (other.service, other.environment) == (item.service,
                                                                 item.environment)
        and item.merged_at < other.merged_at <= ends for other in merged)
    deployed = min((r.at for r in item.reports if r.state == "success"
                    and r.at >= item.merged_at), default=None)
    return DeliveredPromotion(item.service, item.environment, item.merged_at, item.source_at,
                              deployed, rollback=item.rollback, failed=failed)


def _outages(merged: Sequence[_Merged]) -> list[Outage]:
    """Per service and environment: from a failure report (the first of a run of them) to the
    next success report on any of its promotions' merge commits."""
    by_target: dict[tuple[str, str], dict[tuple[str, str, datetime], Report]] = {}
    for item in merged:
        seen = by_target.setdefault((item.service, item.environment), {})
        for report in item.reports:
            seen[report.sha, report.name, report.at] = report
    outages = []
    for (service, env), reports in by_target.items():
        started: datetime | None = None
        for report in sorted(reports.values(), key=lambda r: (r.at, r.order)):
            if report.state != "success" and started is None:
                started = report.at
            elif report.state == "success" and started is not None:
                outages.append(Outage(service, env, started, report.at))
                started = None
        if started is not None:
            outages.append(Outage(service, env, started, None))
    return outages
