"""The reviews a gate counts: approvals and change requests, and whether their author is one of
the environment's approvers (by default, anyone with write permission)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import cachetools
from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import Review
from bot.domain.policy import Policy
from bot.github.repos import WRITE_PERMISSIONS, is_bot, is_team_member, permission_of
from bot.promotion.evidence.deployed import parse_time
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo


@dataclass
class Approvals:
    """Reads reviews; remembers for a while who may approve in a repository."""

    _approvers: cachetools.TTLCache[tuple[str, str, str], bool] = field(
        default_factory=lambda: cachetools.TTLCache(maxsize=4096, ttl=120))

    async def reviews(self, gh: GitHubAPI, repo: DeploymentRepo, policy: Policy,
                      facts: PullFacts, envs: set[str], *, wanted: bool = False
                      ) -> list[Review]:
        """The approvals, change requests and dismissed reviews of the PR, each naming which
        of the environments ``envs`` its author may approve in; not read when none of them
        needs an approval, unless ``wanted``."""
        if not wanted and not any(policy.environments[name].approvals for name in envs):
            return []
        reviews = []
        async for review in gh.getiter(
            f"/repos/{repo.full_name}/pulls/{facts.number}/reviews?per_page=100"
        ):
            state = review.get("state")
            if state not in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                continue
            user = review.get("user") or {}
            login = user.get("login", "")
            # A dismissed review is kept so that it is its author's latest one: their earlier
            # approval of the same head does not count again. It approves nothing, so whether
            # its author is an approver is not asked.
            approver_of = frozenset() if state == "DISMISSED" else await self._approver_of(
                gh, repo.full_name, login, policy, envs)
            reviews.append(Review(
                user=login, state=state, commit_id=review.get("commit_id", ""),
                submitted_at=_time(review.get("submitted_at")), is_bot=is_bot(user),
                approver_of=approver_of, url=review.get("html_url", ""),
            ))
        return reviews

    async def may_approve(self, gh: GitHubAPI, full_name: str, user: str, policy: Policy,
                          env: str) -> bool:
        """Whether an approving review by ``user`` counts for environment ``env``."""
        return env in await self._approver_of(gh, full_name, user, policy, {env})

    async def _approver_of(self, gh: GitHubAPI, full_name: str, user: str, policy: Policy,
                           envs: set[str]) -> frozenset[str]:
        # Environments with the same approvers share one answer (and one lookup).
        lists = {name: sorted(policy.environments[name].approvers) for name in envs}
        answers: dict[tuple[str, ...], bool] = {}
        for approvers in lists.values():
            if tuple(approvers) not in answers:
                answers[tuple(approvers)] = await self._is_approver(gh, full_name, user, approvers)
        return frozenset(name for name, approvers in lists.items() if answers[tuple(approvers)])

    async def _is_approver(self, gh: GitHubAPI, full_name: str, user: str, approvers: list[str]
                           ) -> bool:
        key = (full_name.lower(), user.lower(), ",".join(approvers))
        if key in self._approvers:
            return self._approvers[key]
        if not approvers:
            result = await permission_of(gh, full_name, user) in WRITE_PERMISSIONS
        else:
            result = user.lower() in {a.lower() for a in approvers if not a.startswith("@")}
            for team in (a for a in approvers if a.startswith("@")):
                if result:
                    break
                org, _, slug = team[1:].partition("/")
                result = await is_team_member(gh, org, slug, user)
        self._approvers[key] = result
        return result


def _time(value: str | None) -> datetime:
    return parse_time(value) if value else datetime.min.replace(tzinfo=UTC)
