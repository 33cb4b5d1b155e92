"""Opening, merging and reviewing pull requests, with the webhooks they cause."""

from __future__ import annotations

from conveyor_emulator.checks.required_checks import missing_required
from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.issues.ops_issues import IssueOps
from conveyor_emulator.pulls.pull_merge import merge_info, pull_changes
from conveyor_emulator.repos.ops_git import GitOps
from conveyor_emulator.store.gitstore import Commit, GitStore, MergeConflict
from conveyor_emulator.store.state import JSON, Issue, Pull, Repo, Review


class PullOps(GitOps, IssueOps):
    def open_pull(self, repo: Repo, head: str, base: str, title: str, body: str | None,
                  user: str, draft: bool = False) -> Issue:
        head_branch = head.split(":", 1)[-1]
        head_sha = repo.branch_sha(head_branch)
        base_sha = repo.branch_sha(base)
        errors: list[JSON] = []
        if head_sha is None:
            errors.append({"resource": "PullRequest", "field": "head", "code": "invalid"})
        if base_sha is None:
            errors.append({"resource": "PullRequest", "field": "base", "code": "invalid"})
        if errors or head_sha is None or base_sha is None:
            raise ApiError(422, "Validation Failed", errors)
        for other in repo.issues.values():
            if other.pull and other.state == "open" and other.pull.head_ref == head_branch \
                    and other.pull.base_ref == base:
                raise ApiError(422, "Validation Failed", [{
                    "resource": "PullRequest", "code": "custom",
                    "message": f"A pull request already exists for {repo.owner}:{head_branch}."}])
        if repo.store.is_ancestor(head_sha, base_sha):
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequest", "code": "custom",
                "message": f"No commits between {base} and {head_branch}"}])
        item = self.new_issue(repo, title, body, user,
                              pull=Pull(head_branch, base, head_sha, base_sha, draft=draft))
        self.emit("pull_request", repo, user, {
            "action": "opened", "number": item.number,
            "pull_request": self.pull_json(repo, item)})
        return item

    def merge(self, repo: Repo, item: Issue, *, method: str, sha: str | None, actor: str,
              title: str | None, message: str | None) -> str:
        pr = item.pull
        assert pr is not None
        if pr.merged or item.state != "open":
            raise ApiError(405, "Pull Request is not mergeable")
        if sha is not None and sha != pr.head_sha:
            raise ApiError(409, "Head branch was modified. Review and try the merge again.")
        mergeable, _, tree = merge_info(repo, item)
        if not mergeable or tree is None:
            raise ApiError(405, "Pull Request is not mergeable")
        missing = missing_required(repo, pr.head_sha)
        if missing:
            raise ApiError(405, f"Repository rule violations found\n\nRequired status check "
                                f"\"{missing[0]}\" is expected.")
        if method not in ("merge", "squash", "rebase"):
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequest", "field": "merge_method", "code": "invalid"}])
        store = repo.store
        base_tip = repo.branch_sha(pr.base_ref)
        assert base_tip is not None
        _, commits = pull_changes(repo, item)
        committer, signed = self.merge_committer()
        if method == "merge":
            msg = (title or f"Merge pull request #{item.number} from "
                   f"{repo.owner}/{pr.head_ref}") + "\n\n" + (message if message is not None
                                                               else item.title)
            new = store.put_commit(Commit(tree, (base_tip, pr.head_sha), msg.rstrip("\n"),
                                          self.signature(actor), committer, signed))
        elif method == "squash":
            default_title, default_body = squash_message(store, item, commits)
            msg = title or default_title
            body = message if message is not None else default_body
            if body:
                msg += "\n\n" + body
            # the one who merges is the squash commit's author, whoever opened the PR (the merge
            # box offers the merger's own e-mail addresses; through the API, the app's bot)
            new = store.put_commit(Commit(tree, (base_tip,), msg, self.signature(actor),
                                          committer, signed))
        else:
            new = base_tip
            for sha_ in commits:
                original = store.commit(sha_)
                assert original is not None
                if len(original.parents) > 1:
                    raise ApiError(405, "This branch can't be rebased")
                parent = store.commit(original.parents[0]) if original.parents else None
                parent_tree = parent.tree if parent else None
                current = store.commit(new)
                assert current is not None
                try:
                    replay = store.three_way(parent_tree, current.tree, original.tree)
                except MergeConflict as exc:
                    raise ApiError(405, "This branch can't be rebased") from exc
                new = store.put_commit(Commit(replay, (new,), original.message,
                                              original.author, committer, signed))
        now = self.world.now()
        pr.merged = True
        pr.merged_at = now
        pr.merged_by = actor
        pr.merge_commit_sha = new
        pr.base_sha = base_tip
        item.state = "closed"
        item.closed_at = now
        item.closed_by = actor
        item.updated_at = now
        self.update_ref(repo, "refs/heads/" + pr.base_ref, new, actor)
        self.emit("pull_request", repo, actor, {
            "action": "closed", "number": item.number,
            "pull_request": self.pull_json(repo, item)})
        return new

    def submit_review(self, repo: Repo, item: Issue, user: str, event: str, body: str,
                      commit_id: str | None) -> Review:
        pr = item.pull
        assert pr is not None
        states = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
                  "COMMENT": "COMMENTED", "APPROVED": "APPROVED",
                  "CHANGES_REQUESTED": "CHANGES_REQUESTED", "COMMENTED": "COMMENTED"}
        if event not in states:
            raise ApiError(422, "Validation Failed", [{
                "resource": "PullRequestReview", "field": "event", "code": "invalid"}])
        if event in ("REQUEST_CHANGES", "COMMENT") and not body:
            raise ApiError(422, "Unprocessable Entity", [{
                "resource": "PullRequestReview", "field": "body", "code": "missing"}])
        if user.lower() == item.user.lower() and event in ("APPROVE", "REQUEST_CHANGES"):
            raise ApiError(422, "Unprocessable Entity", [{
                "resource": "PullRequestReview", "code": "custom",
                "message": "Can not approve your own pull request"}])
        rev = Review(self.world.next_id(), user, states[event], body,
                     commit_id or pr.head_sha, self.world.now())
        pr.reviews.append(rev)
        self.emit("pull_request_review", repo, user, {
            "action": "submitted",
            "review": self.review_payload(repo, item.number, rev),
            "pull_request": self.pull_json(repo, item)})
        return rev

    def review_payload(self, repo: Repo, number: int, rev: Review) -> JSON:
        """Webhook payloads spell review states in lower case, unlike the REST API."""
        data = shapes_issues.review(self.world, repo, number, rev)
        data["state"] = rev.state.lower()
        return data

    def dismiss_review(self, repo: Repo, item: Issue, review_id: int, actor: str,
                       message: str) -> Review:
        pr = item.pull
        assert pr is not None
        rev = next((r for r in pr.reviews if r.id == review_id), None)
        if rev is None:
            raise not_found()
        rev.state = "DISMISSED"
        self.emit("pull_request_review", repo, actor, {
            "action": "dismissed",
            "review": self.review_payload(repo, item.number, rev),
            "pull_request": self.pull_json(repo, item)})
        return rev


def squash_message(store: GitStore, item: Issue, commits: list[str]) -> tuple[str, str]:
    """GitHub's default message of a squash merge ("About pull request merges"): for one commit
    (merge commits not counted), that commit's title followed by the PR's number and its body;
    for more, the PR's title followed by its number and every commit's message, in order."""
    messages = [found.message for sha in commits
                if (found := store.commit(sha)) is not None and len(found.parents) < 2]
    if len(messages) == 1:
        title, _, body = messages[0].partition("\n")
        return f"{title} (#{item.number})", body.strip("\n")
    return f"{item.title} (#{item.number})", "\n\n".join(f"* {m}" for m in messages)
