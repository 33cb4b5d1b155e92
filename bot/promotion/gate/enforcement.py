"""Whether GitHub enforces the gate in each deployment repository, and what to say where it
does not (or, where it does, of the settings beside it): the default branch's rules are read
when a repository is first served and at every resync, and kept in between."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.enforcement import Enforcement, foreign_report, judge_enforcement
from bot.github.required_checks import branch_rules
from bot.names import GATE_CHECK
from bot.promotion.policies import DeploymentRepo

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

REPORTS_PAGE = 100


@dataclass
class GateEnforcement:
    """The enforcement of the gate per repository, as last read."""

    ctx: Context
    _known: dict[str, Enforcement] = field(default_factory=dict)

    def known(self, full_name: str) -> Enforcement | None:
        return self._known.get(full_name.lower())

    async def of(self, gh: GitHubAPI, repo: DeploymentRepo) -> Enforcement:
        """As last read; read now when the repository was never read."""
        known = self.known(repo.full_name)
        return known if known is not None else await self.refresh(gh, repo)

    async def refresh(self, gh: GitHubAPI, repo: DeploymentRepo) -> Enforcement:
        rules = await branch_rules(gh, repo.full_name, repo.default_branch)
        found = judge_enforcement(rules, gate=GATE_CHECK, app_id=self.ctx.app_id,
                                  branch=repo.default_branch)
        before = self._known.get(repo.full_name.lower())
        self._known[repo.full_name.lower()] = found
        self.ctx.metrics.gate_enforced.labels(repo.full_name).set(int(found.enforced))
        if found != before and not found.enforced:
            log.warning("GitHub does not enforce the gate",
                        extra={"repository": repo.full_name, "detail": " ".join(found.findings)})
        return found

    async def notes(self, gh: GitHubAPI, repo: DeploymentRepo, head_sha: str
                    ) -> tuple[str, ...]:
        """What a gated pull request's gate says about enforcement: nothing where GitHub
        requires the gate from Conveyor's app; else why it does not, and every report named
        like the gate that someone else posted on the head."""
        found = await self.of(gh, repo)
        if found.enforced:
            return ()
        return found.findings + await self._others_on(gh, repo.full_name, head_sha)

    async def _others_on(self, gh: GitHubAPI, full_name: str, sha: str) -> tuple[str, ...]:
        notes: list[str] = []
        # Conveyor posts no commit status at all: every status of the gate's name is another's
        statuses = await gh.getitem(f"/repos/{full_name}/commits/{sha}/statuses"
                                    f"?per_page={REPORTS_PAGE}")
        for status in statuses or []:
            creator = str((status.get("creator") or {}).get("login") or "someone")
            note = foreign_report(GATE_CHECK, "commit status", f"@{creator}")
            if status.get("context") == GATE_CHECK and note not in notes:
                notes.append(note)
        runs = await gh.getitem(f"/repos/{full_name}/commits/{sha}/check-runs"
                                f"?check_name={quote(GATE_CHECK)}&filter=all"
                                f"&per_page={REPORTS_PAGE}")
        own = self.ctx.bot_login.removesuffix("[bot]")
        for run in runs.get("check_runs") or []:
            slug = str((run.get("app") or {}).get("slug") or "")
            note = foreign_report(GATE_CHECK, "check run", f"the app {slug or 'unknown'}")
            if run.get("name") == GATE_CHECK and slug != own and note not in notes:
                notes.append(note)
        return tuple(notes)
