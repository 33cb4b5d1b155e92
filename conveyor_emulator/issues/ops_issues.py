"""Issues, labels and comments, with the webhooks their changes cause."""

from __future__ import annotations

from conveyor_emulator.errors import ApiError
from conveyor_emulator.events.ops_core import OpsCore
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.store.state import JSON, Comment, Issue, Label, Pull, Repo


class IssueOps(OpsCore):
    def new_issue(self, repo: Repo, title: str, body: str | None, user: str,
                  labels: list[str] | None = None, pull: Pull | None = None) -> Issue:
        now = self.world.now()
        item = Issue(id=self.world.next_id(), number=repo.next_number, title=title, body=body,
                     user=user, created_at=now, updated_at=now, pull=pull)
        repo.next_number += 1
        repo.issues[item.number] = item
        for name in labels or []:
            self.ensure_label(repo, name)
            if name not in item.labels:
                item.labels.append(name)
        return item

    def set_issue_state(self, repo: Repo, item: Issue, state: str, actor: str,
                        reason: str | None = None) -> None:
        if state == item.state:
            return
        now = self.world.now()
        item.state = state
        item.updated_at = now
        if state == "closed":
            item.closed_at = now
            item.closed_by = actor
            item.state_reason = reason or "completed"
        else:
            item.closed_at = None
            item.closed_by = None
            item.state_reason = "reopened"
            if item.pull:
                item.pull.head_sha = repo.branch_sha(item.pull.head_ref) or item.pull.head_sha
        action = "closed" if state == "closed" else "reopened"
        if item.pull:
            self.emit("pull_request", repo, actor, {
                "action": action, "number": item.number,
                "pull_request": self.pull_json(repo, item)})
        else:
            self.emit("issues", repo, actor, {
                "action": action, "issue": shapes_issues.issue(self.world, repo, item)})

    def edit_issue(self, repo: Repo, item: Issue, actor: str, *, title: str | None = None,
                   body: str | None = None, body_set: bool = False) -> None:
        changes: JSON = {}
        if title is not None and title != item.title:
            changes["title"] = {"from": item.title}
            item.title = title
        if body_set and body != item.body:
            changes["body"] = {"from": item.body or ""}
            item.body = body
        if not changes:
            return
        item.updated_at = self.world.now()
        if item.pull:
            self.emit("pull_request", repo, actor, {
                "action": "edited", "number": item.number, "changes": changes,
                "pull_request": self.pull_json(repo, item)})
        else:
            self.emit("issues", repo, actor, {
                "action": "edited", "changes": changes,
                "issue": shapes_issues.issue(self.world, repo, item)})

    def ensure_label(self, repo: Repo, name: str) -> Label:
        for existing in repo.labels.values():
            if existing.name.lower() == name.lower():
                return existing
        lab = Label(self.world.next_id(), name)
        repo.labels[name] = lab
        return lab

    def add_labels(self, repo: Repo, item: Issue, names: list[str], actor: str) -> None:
        for name in names:
            lab = self.ensure_label(repo, name)
            if lab.name in item.labels:
                continue
            item.labels.append(lab.name)
            item.updated_at = self.world.now()
            if item.pull:
                self.emit("pull_request", repo, actor, {
                    "action": "labeled", "number": item.number,
                    "label": shapes_issues.label(self.world, repo, lab),
                    "pull_request": self.pull_json(repo, item)})

    def remove_label(self, repo: Repo, item: Issue, name: str, actor: str) -> None:
        match = next((n for n in item.labels if n.lower() == name.lower()), None)
        if match is None:
            raise ApiError(404, "Label does not exist")
        item.labels.remove(match)
        item.updated_at = self.world.now()
        if item.pull and match in repo.labels:
            self.emit("pull_request", repo, actor, {
                "action": "unlabeled", "number": item.number,
                "label": shapes_issues.label(self.world, repo, repo.labels[match]),
                "pull_request": self.pull_json(repo, item)})

    def issue_payload(self, repo: Repo, item: Issue) -> JSON:
        data = shapes_issues.issue(self.world, repo, item)
        return data

    def add_comment(self, repo: Repo, item: Issue, user: str, body: str) -> Comment:
        now = self.world.now()
        com = Comment(self.world.next_id(), repo.full_name, item.number, user, body, now, now)
        self.world.comments[com.id] = com
        item.comment_ids.append(com.id)
        item.updated_at = now
        self.emit("issue_comment", repo, user, {
            "action": "created", "issue": self.issue_payload(repo, item),
            "comment": shapes_issues.comment(self.world, repo, com)})
        return com

    def edit_comment(self, repo: Repo, com: Comment, body: str, actor: str) -> None:
        old = com.body
        com.body = body
        com.updated_at = self.world.now()
        item = repo.issues[com.issue_number]
        self.emit("issue_comment", repo, actor, {
            "action": "edited", "changes": {"body": {"from": old}},
            "issue": self.issue_payload(repo, item),
            "comment": shapes_issues.comment(self.world, repo, com)})
