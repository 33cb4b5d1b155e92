"""The one `conveyor/promotion-gate` check run of a head commit: created once, updated only
when what it says changes.

What it says is its status, conclusion and output, but for the time the verdict was reached:
a re-evaluation that reaches the same verdict later (every resync re-evaluates every open PR)
writes nothing. After a restart the run found on the commit is compared the same way."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import cachetools
from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import Verdict
from bot.github.checks import check_run, create_check_run, update_check_run
from bot.names import GATE_CHECK
from bot.promotion.gate.render import REACHED_AT, render_gate_output

if TYPE_CHECKING:
    from bot.runtime.context import Context


@dataclass
class GateCheckRuns:
    """Posts gate verdicts; remembers the run and what it says per commit."""

    ctx: Context
    _posted: cachetools.LRUCache[tuple[str, str], tuple[int, str]] = field(
        default_factory=lambda: cachetools.LRUCache(maxsize=4096))

    async def post(self, gh: GitHubAPI, full_name: str, sha: str, verdict: Verdict, *,
                   fresh: bool = False) -> None:
        """Create or update the one gate check run of this head commit; skip if unchanged.
        ``fresh``: a commit this process has just made."""
        output = render_gate_output(verdict)
        fingerprint = _fingerprint(verdict.status, verdict.conclusion, output)
        key = (full_name.lower(), sha)
        shared = self.ctx.locks.shared
        known = self._posted.get(key)
        if not shared and known is not None and known[1] == fingerprint:
            return
        # One writer per commit, across replicas: two that both found no run would create two.
        async with self.ctx.locks.hold(f"gate-run:{full_name}@{sha}"):
            known = None if shared else self._posted.get(key)  # posted by this process
            if known is None and (shared or not fresh):
                # another replica (its `opened` event, even on a commit this process has just
                # made, or a newer verdict than this process last posted), or this process
                # before a restart, may have posted it
                known = await self._existing_run(gh, full_name, sha)
            if known is not None and known[1] == fingerprint:
                self._posted[key] = known
                return
            data = check_run(GATE_CHECK, output, status=verdict.status,
                             conclusion=verdict.conclusion, completed_at=self.ctx.clock())
            if known is None:
                run_id = int((await create_check_run(gh, full_name, sha, data))["id"])
            else:
                run_id = known[0]
                await update_check_run(gh, full_name, run_id, data)
            self._posted[key] = (run_id, fingerprint)

    async def _existing_run(self, gh: GitHubAPI, full_name: str, sha: str
                            ) -> tuple[int, str] | None:
        """Our own gate run on this commit and the fingerprint of what it says (another app's
        run of the same name is ignored)."""
        runs = await gh.getitem(f"/repos/{full_name}/commits/{sha}/check-runs"
                                f"?check_name={GATE_CHECK}&filter=latest")
        own_slug = self.ctx.bot_login.removesuffix("[bot]")
        for run in runs.get("check_runs") or []:
            slug = (run.get("app") or {}).get("slug")
            if run.get("name") == GATE_CHECK and (not own_slug or slug == own_slug):
                output = run.get("output") or {}
                said = {part: str(output.get(part) or "") for part in ("title", "summary",
                                                                       "text")}
                conclusion = run.get("conclusion") if run.get("status") == "completed" else None
                return int(run["id"]), _fingerprint(str(run.get("status")), conclusion, said)
        return None


def _fingerprint(status: str, conclusion: str | None, output: Mapping[str, str]) -> str:
    """What a gate check run says, but for the time its verdict was reached."""
    said = {part: str(output.get(part) or "") for part in ("title", "summary", "text")}
    said["text"] = "\n".join(line for line in said["text"].split("\n")
                             if not line.startswith(REACHED_AT))
    return hashlib.sha256(json.dumps([status, conclusion, said], sort_keys=True).encode()
                          ).hexdigest()
