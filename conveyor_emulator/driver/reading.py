"""Reading the emulator's state for assertions, in GitHub's JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conveyor_emulator.checks import shapes_checks, shapes_deployments
from conveyor_emulator.driver.base import EmulatorBase
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.releases import shapes_releases
from conveyor_emulator.repos import shapes_git
from conveyor_emulator.store.state import Account


class Reading(EmulatorBase):
    def pulls(self, repo: str, *, state: str = "open") -> list[dict[str, Any]]:
        r = self._repo(repo)
        return [self.ops.pull_json(r, i) for i in sorted(r.issues.values(),
                                                          key=lambda i: i.number)
                if i.pull is not None and (state == "all" or i.state == state)]

    def file(self, repo: str, path: str, ref: str | None = None) -> str | None:
        r = self._repo(repo)
        sha = r.resolve(ref or r.default_branch)
        commit = r.store.commit(sha) if sha else None
        if commit is None:
            return None
        entry = r.store.lookup(commit.tree, path)
        if entry is None or entry.type != "blob":
            return None
        return r.store.text(entry.sha)

    def branches(self, repo: str) -> list[str]:
        r = self._repo(repo)
        return sorted(ref[len("refs/heads/"):] for ref in r.refs if ref.startswith("refs/heads/"))

    def commit(self, repo: str, ref: str) -> dict[str, Any]:
        r = self._repo(repo)
        sha = r.resolve(ref)
        if sha is None:
            raise KeyError(ref)
        return shapes_git.commit(self.world, r, sha, files=True)

    def check_runs(self, repo: str, sha: str, name: str | None = None) -> list[dict[str, Any]]:
        r = self._repo(repo)
        resolved = r.resolve(sha) or sha
        out = []
        for run in r.check_runs:
            if run.head_sha == resolved and (name is None or run.name == name):
                data = shapes_checks.check_run(self.world, r, run)
                data["output"]["annotations"] = list(run.annotations)
                data["actions"] = list(run.actions)
                out.append(data)
        return out

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        r = self._repo(repo)
        item = self._issue(r, number)
        return [shapes_issues.comment(self.world, r, self.world.comments[c])
                for c in item.comment_ids if c in self.world.comments]

    def reactions(self, repo: str, comment_id: int) -> list[dict[str, Any]]:
        reactions = self.world.comments[comment_id].reactions
        return [shapes_issues.reaction(self.world, x) for x in reactions]

    def issues(self, repo: str, *, labels: Sequence[str] = ()) -> list[dict[str, Any]]:
        r = self._repo(repo)
        wanted = {label.lower() for label in labels}
        ordered = sorted(r.issues.values(), key=lambda i: i.number)
        return [shapes_issues.issue(self.world, r, i) for i in ordered
                if wanted <= {n.lower() for n in i.labels}]

    def deployments(self, repo: str) -> list[dict[str, Any]]:
        r = self._repo(repo)
        out = []
        for dep in r.deployments:
            data = shapes_deployments.deployment(self.world, r, dep)
            data["statuses"] = [shapes_deployments.deployment_status(self.world, r, dep, s)
                                for s in dep.statuses]
            out.append(data)
        return out

    def statuses(self, repo: str, sha: str) -> list[dict[str, Any]]:
        r = self._repo(repo)
        resolved = r.resolve(sha) or sha
        return [shapes_checks.status(self.world, s) for s in r.statuses if s.sha == resolved]

    def releases(self, repo: str) -> list[dict[str, Any]]:
        r = self._repo(repo)
        return [shapes_releases.release(self.world, r, rel) for rel in r.releases]

    def account(self, login: str) -> Account | None:
        return self.world.find_account(login)
