"""Watching what was promoted: a trusted failure report within `watch` of a merge.

An environment with `on_failure` reads its *own* deployment reports (its `deployed_context`
with `{env}` the environment itself, trusted by its `deployed_by`). When one says `failure` or
`error` for the digest its file pins, no later than `watch` after the commit that brought the
digest in was merged, Conveyor:

1. marks the digest failed there (a check run of its own on that commit, see
   :mod:`.failure_mark`): the gates of its promotions into every environment after this one
   in the graph fail with the report linked, and `promote: auto` opens none there;
2. with `on_failure: rollback`, opens the rollback PR of `/rollback` (back to the previous
   live digest; merged at once where the environment has `auto_merge` and no gate) — unless
   the digest is not live any more, or the failing promotion is itself a rollback (going back
   again would return to the digest that failed first);
3. comments on the promotion PR that caused it.

Each step is recorded on GitHub before the next begins and is skipped when already done, so
a redelivered report, a second failure report or a resync after a restart opens nothing new
and finishes what an interrupted run began. A success report later clears nothing: a person
decides (`/unhold` on a blocked promotion clears the mark, or a new release).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from gidgethub.abc import GitHubAPI

from bot.domain.deployed import Report, Trust
from bot.domain.durations import format_duration
from bot.domain.policy import Environment, Policy
from bot.github.repos import comment, get_file
from bot.promotion.authorship.trust import trusted_pull, written_digest
from bot.promotion.evidence.deployed import DeployedSearch, Target, parse_time
from bot.promotion.evidence.failure_mark import Mark, find_mark, mark_name, update_mark, write_mark
from bot.promotion.evidence.finder import pins
from bot.promotion.history.file_history import ref_of
from bot.promotion.policies import DeploymentRepo
from bot.text import format_time, short_digest

if TYPE_CHECKING:
    from bot.promotion.opening.opener import OpenResult
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

FAILED_STATES = ("failure", "error")
# The resync reads the reports of a live promotion until this long after its watch ended (a
# report posted within watch while Conveyor was down is acted on when it is back).
RESYNC_GRACE = timedelta(days=1)
COMMENT_MARKER = "<!-- conveyor:watch-comment {environment} {service} {digest} -->"


@dataclass(frozen=True)
class Arrival:
    """The commit that brought the digest into the file, and the PR that merged it."""

    sha: str
    merged_at: datetime
    pull: dict[str, Any] | None


def watched(policy: Policy) -> list[Environment]:
    return [env for env in policy.environments.values() if env.on_failure is not None]


class RollBack(Protocol):
    """Opens the rollback of ``service`` in ``environment`` asked for by PR ``number`` (0: no
    PR): the PR opened, or None and why not."""

    async def __call__(self, service: str, environment: str, number: int
                       ) -> tuple[OpenResult | None, str]: ...


class Watcher:
    def __init__(self, ctx: Context, gh: GitHubAPI, repo: DeploymentRepo, roll_back: RollBack
                 ) -> None:
        self.ctx = ctx
        self.gh = gh
        self.repo = repo
        self.policy: Policy = repo.policy
        self.roll_back = roll_back
        # (service, environment) → the version of a chart its file names without a digest
        self._versions: dict[tuple[str, str], str] = {}

    def _trust(self, env: Environment) -> Trust:
        return Trust(env.deployed_by, self.ctx.bot_login, self.ctx.app_id)

    def _target(self, service: str, env: Environment) -> Target:
        return Target(service, env.name, self.policy.path_for(service, env.name),
                      env.deployed_context)

    async def on_report(self, report: Report) -> bool:
        """A webhook's report: every watched (service, environment) it is about. True when it
        marked a digest failed just now (every gate that reads the mark must be judged again)."""
        marked = False
        if report.state not in FAILED_STATES:
            return marked
        for env in watched(self.policy):
            if self._trust(env).refusal(report) is not None:
                continue
            for service in self.policy.services:
                target = self._target(service, env)
                if not target.matches(report.kind, report.name):
                    continue
                digest = await self._digest_at(service, env, report.sha)
                if digest is not None:
                    marked = await self.watch(service, env, digest) or marked
        return marked

    async def resync(self) -> None:
        """After a restart or lost events: the digest live in every watched file."""
        for env in watched(self.policy):
            for service in self.policy.services:
                digest = await self._digest_at(service, env, None)
                if digest is not None:
                    await self.watch(service, env, digest, grace=RESYNC_GRACE)

    async def _digest_at(self, service: str, env: Environment, ref: str | None) -> str | None:
        path = self.policy.path_for(service, env.name)
        found = await get_file(self.gh, self.repo.full_name, path, ref)
        if found is None:
            return None
        tag_key = self.policy.services[service].tag_key
        tag, digest = ref_of(found.text, self.policy.services[service].image, path, tag_key)
        if digest is not None or tag is None or not self.policy.services[service].is_chart:
            return digest
        return await self._chart_digest(service, env, tag)

    async def _chart_digest(self, service: str, env: Environment, version: str) -> str | None:
        """A chart named by its version alone: the digest Conveyor's promotion wrote with the
        version, at the commit that brought it into the file (None: not known)."""
        self._versions[(service, env.name)] = version
        search, target = self._search(service, env, "")
        stretch = await search.pinning_commits(target)
        if not stretch:
            return None
        return await written_digest(self.gh, self.repo.full_name, str(stretch[-1]["sha"]),
                                    service, env.name, self.ctx.bot_login)

    def _search(self, service: str, env: Environment, digest: str
                ) -> tuple[DeployedSearch, Target]:
        full_name = self.repo.full_name
        target = self._target(service, env)
        image = self.policy.services[service].image
        tag_key = self.policy.services[service].tag_key

        version = self._versions.get((service, env.name))

        async def pinned_at(sha: str) -> bool:
            file = await get_file(self.gh, full_name, target.path, sha)
            return pins(file.text if file else None, image, digest, target.path,
                        (tag_key,) if tag_key else (), version=version)

        return DeployedSearch(self.gh, full_name, self.repo.default_branch, pinned_at), target

    async def standing(self, service: str, environment: str, digest: str) -> Mark | None:
        """The standing failure mark of the digest in ``environment``, or None."""
        env = self.policy.environments.get(environment)
        if env is None or env.on_failure is None:
            return None
        search, target = self._search(service, env, digest)
        stretch = await search.pinning_commits(target)
        if not stretch:
            return None
        mark = await find_mark(self.gh, self.repo.full_name, str(stretch[-1]["sha"]), service,
                               environment, digest, own_app_id=self.ctx.app_id,
                               own_login=self.ctx.bot_login)
        return mark if mark is not None and mark.standing else None

    async def clear(self, mark: Mark, service: str, by: str) -> None:
        """A person decided (`/unhold` on a later promotion): the standing ``mark`` of
        ``service`` is cleared (conclusion `neutral`, naming who)."""
        summary = f"{mark.summary}\n\nCleared by @{by} with `/unhold`."
        await update_mark(self.gh, self.repo.full_name, mark, summary=summary, cleared=True)
        log.info("a failure mark was cleared", extra={
            "repository": self.repo.full_name, "service": service, "env": mark.environment,
            "digest": mark.digest, "by": by})

    async def watch(self, service: str, env: Environment, digest: str, *,
                    grace: timedelta | None = None) -> bool:
        """Act on the first trusted failure report of the digest within watch, once; True when
        the digest was marked failed just now. ``grace``: read the reports only while watch
        ended less than this long ago."""
        # One at a time per repository: a report and its redelivery never both mark.
        async with self.ctx.locks.hold(f"watch:{self.repo.full_name}"):
            return await self._watch(service, env, digest, grace)

    async def _watch(self, service: str, env: Environment, digest: str,
                     grace: timedelta | None) -> bool:
        full_name = self.repo.full_name
        search, target = self._search(service, env, digest)
        stretch = await search.pinning_commits(target)
        if not stretch:
            return False
        arrival = await self._arrival(stretch[-1])
        mark = await find_mark(self.gh, full_name, arrival.sha, service, env.name, digest,
                               own_app_id=self.ctx.app_id, own_login=self.ctx.bot_login)
        if mark is None and grace is not None and \
                self.ctx.clock() > arrival.merged_at + env.watch + grace:
            return False
        marked = mark is None
        if mark is None:
            report = self._first_failure(await search.reports(target), env, arrival)
            if report is None:
                return False
            mark = await self._mark(service, env, digest, arrival, report)
        if mark.rollback == "pending":
            mark = await self._roll_back(service, env, arrival, mark)
        if arrival.pull is not None:
            await self._comment(service, env, digest, arrival.pull, mark)
        return marked

    def _first_failure(self, reports: list[Report], env: Environment, arrival: Arrival
                       ) -> Report | None:
        trust = self._trust(env)
        ends = arrival.merged_at + env.watch
        failures = [r for r in reports if r.state in FAILED_STATES and trust.refusal(r) is None
                    and arrival.merged_at <= r.at <= ends]
        return min(failures, key=lambda r: (r.at, r.order), default=None)

    async def _arrival(self, commit: dict[str, Any]) -> Arrival:
        sha = str(commit["sha"])
        pulls = await self.gh.getitem(f"/repos/{self.repo.full_name}/commits/{sha}/pulls")
        merged = [pr for pr in pulls or [] if pr.get("merged_at")
                  and (pr.get("base") or {}).get("ref") == self.repo.default_branch]
        if merged:
            pull = min(merged, key=lambda pr: str(pr["merged_at"]))
            return Arrival(sha, parse_time(str(pull["merged_at"])), pull)
        return Arrival(sha, parse_time(commit["commit"]["committer"]["date"]), None)

    async def _mark(self, service: str, env: Environment, digest: str, arrival: Arrival,
                    report: Report) -> Mark:
        is_rollback = False
        if arrival.pull is not None:
            trusted = await trusted_pull(self.gh, self.repo.full_name, arrival.pull,
                                         self.ctx.bot_login)
            is_rollback = trusted is not None and trusted.rollback
        live = await self._digest_at(service, env, None) == digest
        if env.on_failure != "rollback":
            rollback = "none: on_failure is hold"
        elif is_rollback:
            rollback = ("none: the failing promotion is itself a rollback; going back again "
                        "would return to the digest that failed before it")
        elif not live:
            rollback = "none: the digest is no longer live"
        else:
            rollback = "pending"
        later = self.policy.descendants(env.name)
        title = (f"{service} {short_digest(digest)} reported failing in {env.name} at "
                 f"{format_time(report.at)}")
        where = f" ([report]({report.url}))" if report.url else ""
        summary = (f"{report.describe()}{where}, {format_duration(report.at - arrival.merged_at)} "
                   f"after the merge (watch: {_watch(env)}).\n\n"
                   + (f"Promotions of this digest into {', '.join(later)} fail their gate, "
                      "and `promote: auto` opens none of them, while this mark stands; a "
                      "success report later clears nothing: a person decides with `/unhold` "
                      "on such a PR, or a new release brings another digest."
                      if later else "No environment comes after this one."))
        log.warning("a promotion was reported failing", extra={
            "repository": self.repo.full_name, "service": service, "env": env.name,
            "digest": digest, "report": report.describe()})
        return await write_mark(
            self.gh, self.repo.full_name, arrival.sha, service, env.name, digest,
            reported_at=report.at, report_url=report.url, title=title, summary=summary,
            rollback=rollback)

    async def _roll_back(self, service: str, env: Environment, arrival: Arrival, mark: Mark
                         ) -> Mark:
        number = int(arrival.pull["number"]) if arrival.pull is not None else 0
        result, text = await self.roll_back(service, env.name, number)
        outcome = f"#{result.number}" if result is not None and result.number else \
            f"none: {text.removeprefix('❌ ')}"
        merged = " (merged: auto_merge)" if result is not None and result.merged else ""
        summary = f"{mark.summary}\n\nRollback: {outcome}{merged}."
        await update_mark(self.gh, self.repo.full_name, mark, rollback=outcome, summary=summary)
        if result is not None and result.number:
            self.ctx.metrics.promotions.labels(env.name, "rolled_back").inc()
        return replace(mark, rollback=outcome, summary=summary)

    async def _comment(self, service: str, env: Environment, digest: str,
                       pull: dict[str, Any], mark: Mark) -> None:
        repo, number = self.repo.full_name, int(pull["number"])
        hidden = COMMENT_MARKER.format(environment=env.name, service=service, digest=digest)
        async for posted in self.gh.getiter(
                f"/repos/{repo}/issues/{number}/comments?per_page=100"):
            if hidden in str(posted.get("body") or "") and _is_bot(posted, self.ctx.bot_login):
                return
        if mark.rollback.startswith("#"):
            action = f"Conveyor opened the rollback {mark.rollback}."
        elif mark.rollback == "pending":
            action = "The rollback is being opened."
        else:
            action = f"No rollback is opened ({mark.rollback.removeprefix('none: ')})."
        link = f"[{mark.title}]({mark.url})" if mark.url else mark.title
        body = (f"{hidden}\n⚠️ **{link}** — within `watch` ({_watch(env)}) of this merge.\n\n"
                f"{action} The digest is marked failed in {env.name} (check run "
                f"`{mark_name(service, env.name)}` on {mark_commit(pull)}).\n\n{mark.summary}")
        await comment(self.gh, repo, number, body)


def _is_bot(comment: dict[str, Any], bot_login: str) -> bool:
    return str((comment.get("user") or {}).get("login") or "").lower() == bot_login.lower()


def mark_commit(pull: dict[str, Any]) -> str:
    sha = str(pull.get("merge_commit_sha") or "")
    return sha[:7] if sha else "its merge commit"


def _watch(env: Environment) -> str:
    return format_duration(env.watch)
