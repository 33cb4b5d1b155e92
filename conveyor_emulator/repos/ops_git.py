"""Commits and ref updates, with the `push`, `check_suite` and `synchronize` webhooks they cause."""

from __future__ import annotations

from collections.abc import Mapping

from conveyor_emulator.events.ops_core import OpsCore
from conveyor_emulator.repos.push_payloads import push_body
from conveyor_emulator.store.gitstore import FILE_MODE, Commit, Signature
from conveyor_emulator.store.state import Repo


class GitOps(OpsCore):
    def write_commit(self, repo: Repo, parent: str | None, files: Mapping[str, bytes | None],
                     message: str, author: Signature, committer: Signature,
                     verified: bool, modes: Mapping[str, str] | None = None) -> str:
        """A commit of ``files`` over ``parent`` (None: removed); ``modes``: the git mode of a
        file that is not a plain one (a symbolic link, 120000, whose data is its target)."""
        store = repo.store
        base: dict[str, tuple[str, str]] = {}
        if parent:
            commit = store.commit(parent)
            if commit is not None:
                base = store.flatten(commit.tree)
        for path, data in files.items():
            path = path.strip("/")
            if data is None:
                base.pop(path, None)
                for key in [k for k in base if k.startswith(path + "/")]:
                    del base[key]
            else:
                base[path] = ((modes or {}).get(path, FILE_MODE), store.put_blob(data))
        tree = store.write_tree(base)
        return store.put_commit(Commit(tree, (parent,) if parent else (), message, author,
                                       committer, verified))

    def commit_files(self, repo: Repo, branch: str, files: Mapping[str, bytes | None],
                     message: str, actor: str, *, verified: bool,
                     modes: Mapping[str, str] | None = None) -> str:
        parent = repo.branch_sha(branch)
        author = self.signature(actor)
        committer, verified = self.web_committer(author) if verified else (author, False)
        sha = self.write_commit(repo, parent, files, message, author, committer, verified,
                                modes)
        self.update_ref(repo, "refs/heads/" + branch, sha, actor)
        return sha

    def update_ref(self, repo: Repo, ref: str, new: str | None, actor: str, *,
                   forced: bool = False, emit: bool = True) -> None:
        old = repo.refs.get(ref)
        if new is None:
            repo.refs.pop(ref, None)
        else:
            repo.refs[ref] = new
        repo.pushed_at = self.world.now()
        if not emit or old == new:
            return
        self.emit("push", repo, actor, push_body(self.world, repo, ref, old, new, actor, forced))
        if not ref.startswith("refs/heads/") or new is None:
            return
        branch = ref[len("refs/heads/"):]
        self.emit("check_suite", repo, actor, {
            "action": "requested",
            "check_suite": self._suite_json(repo, new),
        })
        for item in list(repo.issues.values()):
            pr = item.pull
            if pr is None or item.state != "open" or pr.head_ref != branch:
                continue
            before = pr.head_sha
            pr.head_sha = new
            pr.base_sha = repo.branch_sha(pr.base_ref) or pr.base_sha
            item.updated_at = self.world.now()
            self.emit("pull_request", repo, actor, {
                "action": "synchronize", "number": item.number, "before": before,
                "after": new, "pull_request": self.pull_json(repo, item),
            })
