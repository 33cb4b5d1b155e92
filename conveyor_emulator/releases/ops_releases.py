"""Publishing releases (and their tags), with the `release` webhooks."""

from __future__ import annotations

from conveyor_emulator.errors import ApiError
from conveyor_emulator.releases import shapes_releases
from conveyor_emulator.repos.ops_git import GitOps
from conveyor_emulator.store.state import Release, Repo


class ReleaseOps(GitOps):
    def publish_release(self, repo: Repo, tag: str, *, author: str, prerelease: bool,
                        draft: bool, target: str | None, name: str | None,
                        body: str | None) -> Release:
        now = self.world.now()
        commitish = target or repo.default_branch
        if "refs/tags/" + tag not in repo.refs and not draft:
            sha = repo.resolve(commitish)
            if sha is None:
                raise ApiError(422, "Validation Failed", [{
                    "resource": "Release", "field": "target_commitish", "code": "invalid"}])
            self.update_ref(repo, "refs/tags/" + tag, sha, author)
        rel = Release(self.world.next_id(), tag, commitish, name or tag, body, draft,
                      prerelease, author, now, None if draft else now)
        repo.releases.append(rel)
        actions = ["created"] if draft else \
            ["created", "published", "prereleased" if prerelease else "released"]
        for action in actions:
            self.emit("release", repo, author, {
                "action": action, "release": shapes_releases.release(self.world, repo, rel)})
        return rel
