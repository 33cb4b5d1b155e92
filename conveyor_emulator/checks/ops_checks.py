"""Check run webhooks and commit statuses."""

from __future__ import annotations

from conveyor_emulator.checks import shapes_checks
from conveyor_emulator.events.ops_core import OpsCore
from conveyor_emulator.repos import shapes_git
from conveyor_emulator.store.state import JSON, CheckRun, Repo, Status, iso


class CheckOps(OpsCore):
    def check_run_event(self, repo: Repo, run: CheckRun, action: str, actor: str,
                        extra: JSON | None = None) -> None:
        data = shapes_checks.check_run(self.world, repo, run)
        data["check_suite"] = self._suite_json(repo, run.head_sha)
        self.emit("check_run", repo, actor, {"action": action, "check_run": data,
                                             **(extra or {})})

    def add_status(self, repo: Repo, sha: str, state: str, context: str,
                   description: str | None, target_url: str | None, actor: str) -> Status:
        now = self.world.now()
        st = Status(self.world.next_id(), sha, state, context, description, target_url, actor,
                    now, now)
        repo.statuses.append(st)
        commit = shapes_git.commit(self.world, repo, sha)
        branches = [
            {"name": r[len("refs/heads/"):],
             "commit": {"sha": s, "url": f"{self.world.api_url}/repos/{repo.full_name}"
                                         f"/commits/{s}"},
             "protected": False}
            for r, s in repo.refs.items() if r.startswith("refs/heads/") and s == sha
        ]
        self.emit("status", repo, actor, {
            "id": st.id, "sha": sha, "name": repo.full_name, "target_url": target_url,
            "context": context, "description": description, "state": state,
            "commit": commit, "branches": branches, "created_at": iso(now),
            "updated_at": iso(now), "avatar_url": None})
        return st
