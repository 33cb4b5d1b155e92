"""Acting as people and CI: pushes, releases, containers, pull requests, comments, reviews,
labels, deployments, statuses, check runs and merge queues, each waiting for the webhooks it
causes."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor_emulator.checks import shapes_checks, shapes_deployments
from conveyor_emulator.checks.routes_deployments import auto_merge_conflict
from conveyor_emulator.driver.base import EmulatorBase
from conveyor_emulator.errors import ApiError
from conveyor_emulator.issues import shapes_issues
from conveyor_emulator.pulls import pull_merge
from conveyor_emulator.registry.images import build_image, image_for
from conveyor_emulator.releases import shapes_releases
from conveyor_emulator.releases.packages import add_version, attestation_bundle, event_body
from conveyor_emulator.store.gitstore import SYMLINK_MODE, Commit, Tag
from conveyor_emulator.store.state import JSON, Attestation, CheckRun, Issue, Repo, WorkflowRun


class Acting(EmulatorBase):
    async def push_files(self, repo: str, files: Mapping[str, str | bytes | None], *,
                         branch: str | None = None, message: str = "Update files",
                         author: str = "alice", symlinks: Mapping[str, str] | None = None
                         ) -> str:
        """One commit of ``files`` (None: removed) and ``symlinks`` (path → the target a
        symbolic link names, as `git add` of a link stores it: a blob of mode 120000 whose
        data is the target)."""
        r = self._repo(repo)
        target = branch or r.default_branch
        encoded = {p: (c.encode() if isinstance(c, str) else c) for p, c in files.items()}
        encoded |= {p: link.encode() for p, link in (symlinks or {}).items()}
        modes = dict.fromkeys(symlinks or {}, SYMLINK_MODE)
        if r.branch_sha(target) is None and r.refs:
            # a new branch starts from the default branch, like `git checkout -b`
            base = r.branch_sha(r.default_branch)
            if base is not None:
                r.refs["refs/heads/" + target] = base
        result: str = await self._act(
            lambda: self.ops.commit_files(r, target, encoded, message, author, verified=False,
                                          modes=modes))
        return result

    async def create_branch(self, repo: str, branch: str, sha: str | None = None, *,
                            user: str = "alice") -> None:
        r = self._repo(repo)
        target = sha or r.branch_sha(r.default_branch)
        await self._act(lambda: self.ops.update_ref(r, "refs/heads/" + branch, target, user))

    async def create_tag(self, repo: str, tag: str, sha: str | None = None, *,
                         annotated: bool = False, user: str = "alice") -> None:
        r = self._repo(repo)
        target = r.resolve(sha) if sha else r.branch_sha(r.default_branch)
        if target is None:
            raise KeyError(f"nothing to tag at {sha!r} in {repo}")
        obj = target
        if annotated:
            obj = r.store.put_tag(Tag(tag, target, "commit", f"Release {tag}\n",
                                      self.ops.signature(user)))
        await self._act(lambda: self.ops.update_ref(r, "refs/tags/" + tag, obj, user))

    async def publish_release(self, repo: str, tag: str, *, author: str = "alice",
                              prerelease: bool = False, draft: bool = False,
                              target: str | None = None, name: str | None = None,
                              body: str | None = None) -> dict[str, Any]:
        r = self._repo(repo)
        rel = await self._act(lambda: self.ops.publish_release(
            r, tag, author=author, prerelease=prerelease, draft=draft, target=target, name=name,
            body=body))
        return shapes_releases.release(self.world, r, rel)

    def build_image(self, text: str, *, labels: Mapping[str, str] | None = None) -> str:
        """A multi-arch image with real content standing for `text`: its index digest, ready
        for `publish_container`."""
        return build_image(text, labels=labels).digest

    async def publish_container(self, owner: str, package: str, digest: str,
                                tags: Sequence[str], *, source_repo: str | None = None,
                                revision: str | None = None,
                                sender: str = "github-actions[bot]",
                                emit: bool = True) -> dict[str, Any]:
        """CI pushes an image built by `build_image` (or `digest_of`) and tags it.

        As GHCR does for a multi-arch push, each per-platform manifest arrives first as an
        untagged version with its own `registry_package`/`package` events, then the index with
        one event pair per tag.
        """
        image = image_for(digest)
        if image is None:
            raise ValueError(f"{digest} is not an image built by build_image()/digest_of(): "
                             "the registry serves real content, so digests must be real")
        world = self.world
        self.registry.store(image)
        for platform in image.platform_digests:
            add_version(world, owner, package, platform, [], source_repo, sender)
        pkg, ver = add_version(world, owner, package, digest, tags, source_repo, sender)
        if emit:
            src = world.repos.get(source_repo.lower()) if source_repo else None
            events: list[tuple[str, Any]] = []
            for platform in image.platform_digests:
                pv = next(v for v in pkg.versions if v.name == platform)
                events.append(("", pv))
            for tag in (list(tags) or [""]):
                events.append((tag, ver))

            def fire() -> None:
                for tag_name, version in events:
                    for event in ("registry_package", "package"):
                        body = event_body(world, pkg, version, tag_name, revision=revision,
                                          event=event)
                        self.ops.emit(event, src, sender, {"action": "published", event: body},
                                      owner=owner)

            await self._act(fire)
        return shapes_releases.package_version(world, pkg, ver)

    def add_attestation(self, repo: str, digest: str, *, commit: str,
                        workflow_path: str = ".github/workflows/release.yml",
                        ref: str = "refs/tags/v1", run_id: int | None = None,
                        signer: str | None = None, statement: JSON | None = None) -> JSON:
        """`repo`'s workflow attests the build of `digest` (`actions/attest-build-provenance`):
        a bundle signed by the Sigstore instance GitHub uses for the repository, listed under
        it and its organisation. `signer` names a reusable workflow of another repository
        (`owner/repo/path@ref`); `statement` replaces the SLSA provenance one. The bundle."""
        r = self._repo(repo)
        run = run_id if run_id is not None else self.world.next_id()
        attestation = attestation_bundle(self.world, r, digest, commit=commit,
                                         workflow_path=workflow_path, ref=ref, run_id=run,
                                         signer=signer, statement=statement)
        r.attestations.append(attestation)
        return attestation.bundle

    def add_attestation_bundle(self, repo: str, digest: str, bundle: JSON) -> None:
        """List any `bundle` under `repo` for `digest`, as GitHub lists what was uploaded
        ("Create an attestation" takes any bundle; verification is the reader's)."""
        r = self._repo(repo)
        payload = (bundle.get("dsseEnvelope") or {}).get("payload") or ""
        try:
            kind = str(json.loads(base64.b64decode(payload)).get("predicateType"))
        except (ValueError, AttributeError):
            kind = ""
        r.attestations.append(Attestation(self.world.next_id(), r.full_name, digest, bundle,
                                          kind))

    def sigstore_trusted_roots(self) -> str:
        """The trusted roots of the Sigstore instances that sign this GitHub's attestations,
        one JSON document a line (what `CONVEYOR_SIGSTORE_TRUST` names)."""
        return self.world.sigstore.trusted_roots()

    def sigstore_trust_file(self) -> str:
        """A file holding `sigstore_trusted_roots()`, for a bot in another process; removed
        when the emulator stops."""
        if self._trust_dir is None:
            self._trust_dir = tempfile.mkdtemp(prefix="conveyor-emulator-sigstore-")
            path = os.path.join(self._trust_dir, "trusted-roots.jsonl")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(self.sigstore_trusted_roots())
        return os.path.join(self._trust_dir, "trusted-roots.jsonl")

    def add_workflow_run(self, repo: str, head_sha: str, *, name: str = "release",
                         conclusion: str = "success", event: str = "push",
                         path: str | None = None, head_branch: str | None = None
                         ) -> dict[str, Any]:
        r = self._repo(repo)
        run = WorkflowRun(self.world.next_id(), r.full_name, name, head_sha,
                          head_branch or r.default_branch,
                          path or f".github/workflows/{name}.yml", event, "completed",
                          conclusion, len(r.workflow_runs) + 1, self.world.now(),
                          "github-actions[bot]")
        r.workflow_runs.append(run)
        return shapes_checks.workflow_run(self.world, r, run)

    async def open_pull(self, repo: str, head: str, *, base: str | None = None, title: str,
                        body: str = "", author: str, draft: bool = False) -> dict[str, Any]:
        r = self._repo(repo)
        item: Issue = await self._act(lambda: self.ops.open_pull(
            r, head, base or r.default_branch, title, body, author, draft))
        return self.ops.pull_json(r, item)

    async def open_issue(self, repo: str, title: str, *, body: str = "", author: str,
                         labels: Sequence[str] = ()) -> dict[str, Any]:
        r = self._repo(repo)

        def run() -> Issue:
            item = self.ops.new_issue(r, title, body, author, list(labels))
            self.ops.emit("issues", r, author, {
                "action": "opened", "issue": shapes_issues.issue(self.world, r, item)})
            return item

        item: Issue = await self._act(run)
        return shapes_issues.issue(self.world, r, item)

    async def comment(self, repo: str, number: int, user: str, body: str) -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        com = await self._act(lambda: self.ops.add_comment(r, item, user, body))
        return shapes_issues.comment(self.world, r, com)

    async def edit_pull(self, repo: str, number: int, *, body: str, user: str
                        ) -> dict[str, Any]:
        """Someone with write access edits the PR's description (anyone's PR, as on GitHub)."""
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.edit_issue(r, item, user, body=body, body_set=True))
        return self.ops.pull_json(r, item)

    async def edit_comment(self, repo: str, comment_id: int, body: str, *,
                           user: str) -> dict[str, Any]:
        r = self._repo(repo)
        com = self.world.comments[comment_id]
        await self._act(lambda: self.ops.edit_comment(r, com, body, user))
        return shapes_issues.comment(self.world, r, com)

    async def review(self, repo: str, number: int, user: str, state: str, *, body: str = "",
                     commit_id: str | None = None) -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        rev = await self._act(lambda: self.ops.submit_review(r, item, user, state, body,
                                                             commit_id))
        return shapes_issues.review(self.world, r, number, rev)

    async def dismiss_review(self, repo: str, number: int, review_id: int, *, user: str,
                             message: str = "Dismissed") -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        rev = await self._act(lambda: self.ops.dismiss_review(r, item, review_id, user,
                                                              message))
        return shapes_issues.review(self.world, r, number, rev)

    async def merge_pull(self, repo: str, number: int, *, user: str,
                         method: str = "squash") -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.merge(r, item, method=method, sha=None, actor=user,
                                               title=None, message=None))
        return self.ops.pull_json(r, item)

    async def close_pull(self, repo: str, number: int, *, user: str) -> dict[str, Any]:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.set_issue_state(r, item, "closed", user))
        return self.ops.pull_json(r, item)

    async def add_labels(self, repo: str, number: int, labels: Sequence[str], *,
                         user: str) -> None:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.add_labels(r, item, list(labels), user))

    async def remove_label(self, repo: str, number: int, name: str, *, user: str) -> None:
        r = self._repo(repo)
        item = self._issue(r, number)
        await self._act(lambda: self.ops.remove_label(r, item, name, user))

    async def create_deployment(self, repo: str, sha: str, environment: str, *,
                                state: str = "success", user: str = "argocd[bot]",
                                payload: dict[str, Any] | None = None,
                                auto_merge: bool = False) -> dict[str, Any]:
        """A deployment of ``sha`` by ``user`` and its first status; ``auto_merge`` as the API
        applies it (an ApiError 409 for a sha behind the default branch)."""
        r = self._repo(repo)
        resolved = r.resolve(sha)
        if resolved is None:
            raise KeyError(f"unknown commit {sha}")
        conflict = auto_merge_conflict(r, sha, resolved) if auto_merge else None
        if conflict is not None:
            raise ApiError(409, conflict)

        def run() -> Any:
            dep = self.ops.create_deployment(
                r, ref=sha, sha=resolved, environment=environment, payload=payload or {},
                description=None, actor=user, task="deploy", transient=False,
                production=environment == "production")
            if state:
                self.ops.add_deployment_status(
                    r, dep, state=state, actor=user, description="", log_url="",
                    environment_url="", environment=None)
            return dep

        dep = await self._act(run)
        return shapes_deployments.deployment(self.world, r, dep)

    async def set_deployment_status(self, repo: str, deployment_id: int, state: str, *,
                                    user: str = "argocd[bot]") -> dict[str, Any]:
        r = self._repo(repo)
        dep = next(d for d in r.deployments if d.id == deployment_id)
        st = await self._act(lambda: self.ops.add_deployment_status(
            r, dep, state=state, actor=user, description="", log_url="", environment_url="",
            environment=None))
        return shapes_deployments.deployment_status(self.world, r, dep, st)

    async def set_status(self, repo: str, sha: str, context: str, state: str, *,
                         user: str = "argocd[bot]", description: str | None = None,
                         target_url: str | None = None) -> None:
        r = self._repo(repo)
        resolved = r.resolve(sha)
        if resolved is None:
            raise KeyError(f"unknown commit {sha}")
        await self._act(lambda: self.ops.add_status(r, resolved, state, context, description,
                                                    target_url, user))

    def add_app(self, slug: str) -> int:
        """Another GitHub App on the installation's repositories (Argo CD notifications, a
        Flux notification-controller with app credentials); it acts as ``<slug>[bot]``."""
        app_id = self.world.next_id()
        self.world.other_apps[app_id] = slug.lower()
        self.world.account(f"{slug}[bot]")
        return app_id

    async def create_check_run(self, repo: str, sha: str, name: str, *, app: str,
                               conclusion: str | None = "success", status: str = "completed",
                               details_url: str | None = None) -> dict[str, Any]:
        """A check run created by another app (only GitHub Apps can create check runs)."""
        r = self._repo(repo)
        resolved = r.resolve(sha)
        app_id = self.world.app_of(f"{app}[bot]")
        if resolved is None or app_id is None:
            raise KeyError(f"unknown commit {sha} or app {app}")

        def run() -> CheckRun:
            now = self.world.now()
            suite = self.world.suite_for(r, resolved, app_id)
            check = CheckRun(self.world.next_id(), r.full_name, name, resolved, suite.id,
                             app_id, status, conclusion if status == "completed" else None, now,
                             now if status == "completed" else None, {}, [], details_url,
                             "argocd-notifications", [])
            r.check_runs.append(check)
            self.ops.check_run_event(r, check, "created", f"{app}[bot]")
            if check.status == "completed":
                self.ops.check_run_event(r, check, "completed", f"{app}[bot]")
            return check

        return shapes_checks.check_run(self.world, r, await self._act(run))

    def _check_run(self, repo: Repo, check_run_id: int) -> CheckRun:
        run = next((c for c in repo.check_runs if c.id == check_run_id), None)
        if run is None:
            raise KeyError(f"unknown check run {check_run_id}")
        return run

    async def rerequest_check_run(self, repo: str, check_run_id: int, *, user: str) -> None:
        r = self._repo(repo)
        run = self._check_run(r, check_run_id)
        await self._act(lambda: self.ops.check_run_event(r, run, "rerequested", user))

    async def request_check_run_action(self, repo: str, check_run_id: int, identifier: str, *,
                                       user: str) -> None:
        r = self._repo(repo)
        run = self._check_run(r, check_run_id)
        await self._act(lambda: self.ops.check_run_event(
            r, run, "requested_action", user, {"requested_action": {"identifier": identifier}}))

    async def rerequest_check_suite(self, repo: str, sha: str, *, user: str) -> None:
        r = self._repo(repo)
        resolved = r.resolve(sha)
        if resolved is None:
            raise KeyError(f"unknown commit {sha}")
        await self._act(lambda: self.ops.emit("check_suite", r, user, {
            "action": "rerequested", "check_suite": self.ops._suite_json(r, resolved)}))

    async def merge_group(self, repo: str, number: int, *, user: str = "alice",
                          behind: str | None = None) -> str:
        """Put a pull request in the merge queue: a `gh-readonly-queue/...` branch holding the
        merge result, and `merge_group.checks_requested`. Returns the queue commit's sha.
        ``behind``: the queue commit of the pull request queued ahead of it, which this one is
        built on (GitHub's "Merging a pull request with a merge queue": the temporary branch
        holds the base branch, the changes of the pull requests ahead in the queue and this
        one's); `base_sha` stays the target branch's head."""
        r = self._repo(repo)
        item = self._issue(r, number)
        pr = item.pull
        assert pr is not None
        mergeable, _, tree = pull_merge.merge_info(r, item)
        if not mergeable or tree is None:
            raise ApiError(405, "Pull Request is not mergeable")
        base_sha = r.branch_sha(pr.base_ref)
        assert base_sha is not None
        parent = base_sha
        if behind is not None:
            ahead = r.store.commit(behind)
            head = r.store.commit(pr.head_sha)
            assert ahead is not None and head is not None
            common = r.store.merge_base(behind, pr.head_sha)
            common_commit = r.store.commit(common) if common else None
            tree = r.store.three_way(common_commit.tree if common_commit else None,
                                     ahead.tree, head.tree)
            parent = behind
        sig, signed = self.ops.merge_committer()
        sha = r.store.put_commit(Commit(tree, (parent, pr.head_sha),
                                        f"Merge pull request #{number}", sig, sig, signed))
        branch = f"gh-readonly-queue/{pr.base_ref}/pr-{number}-{pr.head_sha}"
        r.refs["refs/heads/" + branch] = sha
        commit = r.store.commit(sha)
        assert commit is not None
        body = {"action": "checks_requested", "merge_group": {
            "head_sha": sha, "head_ref": "refs/heads/" + branch, "base_sha": base_sha,
            "base_ref": "refs/heads/" + pr.base_ref,
            "head_commit": {
                "id": sha, "tree_id": commit.tree, "message": commit.message,
                "timestamp": commit.committer.date.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "author": {"name": sig.name, "email": sig.email},
                "committer": {"name": sig.name, "email": sig.email}}}}
        await self._act(lambda: self.ops.emit("merge_group", r, user, body))
        return sha

    async def send_event(self, event: str, payload: dict[str, Any]) -> int:
        inst = payload.get("installation")
        inst_id = inst.get("id") if isinstance(inst, dict) else None
        repo = payload.get("repository")
        repo_id = repo.get("id") if isinstance(repo, dict) else None
        delivery = await self.hooks.send_now(event, payload, installation_id=inst_id,
                                             repository_id=repo_id)
        return delivery.status_code

    async def redeliver(self, delivery_id: int) -> int:
        return (await self.hooks.redeliver(delivery_id)).status_code
