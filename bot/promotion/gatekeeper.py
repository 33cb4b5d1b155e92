"""The gate's edge: gather the facts of one PR, ask the pure verdict, post the check run."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

from ..domain.freeze import freeze_status
from ..domain.gate import (
    NO_GATED_CHANGE,
    EnvironmentRules,
    Evidence,
    FileProblem,
    GateInput,
    ImageChange,
    Review,
    Verdict,
    evaluate_gate,
)
from ..domain.images import image_allowed, same_image
from ..domain.policy import Environment, Policy, Service
from ..domain.provenance import attestation_problem
from ..github.checks import check_run, create_check_run, update_check_run
from ..github.repos import (
    UnreadableFile,
    add_labels,
    comment,
    get_file,
    is_bot,
    is_team_member,
    permission_of,
)
from ..manifests import ManifestError
from ..manifests.references import ImageReference, deploy_references
from ..names import GATE_CHECK, POLICY_PATH
from ..offload import run_cpu
from ..text import error_text, short_digest
from .deployed import parse_time
from .evidence import EvidenceFinder
from .marker import PromotionMarker, parse_marker
from .merger import merge_promotion
from .policies import BrokenPolicy, DeploymentRepo, IndexedRepo
from .provenance import find_attestation
from .render_gate import render_gate_output
from .trust import ConveyorCommit, trusted_pull

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

HOLD_LABEL = "conveyor/hold"
HOLD_MARKER = "<!-- conveyor:hold -->"
WRITE_PERMISSIONS = ("admin", "maintain", "write")
# "List pull requests files": responses include a maximum of 3000 files.
MAX_LISTED_FILES = 3000


@dataclass
class PullFacts:
    number: int
    head_sha: str
    base_sha: str
    author: str
    labels: tuple[str, ...]
    marker: PromotionMarker | None
    html_url: str
    state: str
    changed_files: int | None = None
    # the commit Conveyor made on its own PR, the only source of trust (None for anyone else's)
    trusted: ConveyorCommit | None = None

    @classmethod
    def from_api(cls, pr: dict[str, Any]) -> PullFacts:
        return cls(
            number=int(pr["number"]), head_sha=pr["head"]["sha"], base_sha=pr["base"]["sha"],
            author=(pr.get("user") or {}).get("login", ""),
            labels=tuple(label["name"] for label in pr.get("labels") or []),
            marker=parse_marker(pr.get("body")), html_url=pr.get("html_url", ""),
            state=pr.get("state", "open"),
            changed_files=pr.get("changed_files") if isinstance(pr.get("changed_files"), int)
            else None,
        )


@dataclass
class GateService:
    """Coalesces evaluations: one running per PR, at most one more queued behind it."""

    ctx: Context

    _running: dict[tuple[str, int], bool] = field(default_factory=dict)
    _posted: cachetools.LRUCache[tuple[str, str], tuple[int, str]] = field(
        default_factory=lambda: cachetools.LRUCache(maxsize=4096))
    _approvers: cachetools.TTLCache[tuple[str, str, str], bool] = field(
        default_factory=lambda: cachetools.TTLCache(maxsize=4096, ttl=120))
    _unattested: cachetools.TTLCache[tuple[str, str], bool] = field(
        default_factory=lambda: cachetools.TTLCache(maxsize=4096, ttl=1800))

    async def evaluate(self, gh: GitHubAPI, repo: IndexedRepo, number: int,
                       pr: dict[str, Any] | None = None) -> Verdict | None:
        key = (repo.full_name.lower(), number)
        if key in self._running:
            self._running[key] = True  # re-run once the current evaluation ends
            return None
        self._running[key] = False
        verdict = None
        try:
            while True:
                verdict = await self._evaluate_once(gh, repo, number, pr)
                pr = None  # a re-run reads the PR afresh
                if not self._running.get(key):
                    break
                self._running[key] = False
        finally:
            self._running.pop(key, None)
        return verdict

    async def facts_of(self, gh: GitHubAPI, repo: IndexedRepo,
                       pr: dict[str, Any]) -> PullFacts:
        facts = PullFacts.from_api(pr)
        if facts.state == "open":
            facts.trusted = await trusted_pull(gh, repo.full_name, pr, self.ctx.bot_login)
        return facts

    async def _evaluate_once(self, gh: GitHubAPI, repo: IndexedRepo,
                             number: int, pr: dict[str, Any] | None) -> Verdict | None:
        if pr is None:
            pr = await gh.getitem(f"/repos/{repo.full_name}/pulls/{number}")
        facts = await self.facts_of(gh, repo, pr)
        if facts.state != "open":
            return None
        verdict = await self.verdict_for(gh, repo, facts)
        await self.post(gh, repo.full_name, facts.head_sha, verdict)
        self.ctx.metrics.gate_verdicts.labels(verdict.conclusion or verdict.status).inc()
        if verdict.recheck_at is not None:
            self.ctx.scheduler.at(
                f"gate:{repo.full_name}#{number}", verdict.recheck_at, "recheck",
                {"repository": {"full_name": repo.full_name}, "number": number,
                 "installation": {"id": getattr(gh, "installation_id", None)}},
            )
        if isinstance(repo, DeploymentRepo):
            await self._auto_merge(gh, repo, facts, verdict)
        return verdict

    async def verdict_for(self, gh: GitHubAPI, repo: IndexedRepo,
                          facts: PullFacts) -> Verdict:
        """The gate's verdict on the pull request of ``facts``, without posting it.

        Reads what the verdict rests on (the changed files, upstream evidence, reviews, hold
        and freeze) and leaves the decision to :func:`evaluate_gate`; a repository whose policy
        was never valid (a :class:`BrokenPolicy`) gets a failure.
        """
        if isinstance(repo, BrokenPolicy):
            return Verdict("completed", "failure", f"The policy {POLICY_PATH} is invalid",
                           (), None)
        policy = repo.policy
        changes, problems = await self._changes(gh, repo, policy, facts)
        if not changes and not problems:
            return NO_GATED_CHANGE
        finder = EvidenceFinder(gh, repo.full_name, repo.default_branch, policy, self.ctx.web_url,
                                own_login=self.ctx.bot_login, own_app_id=self.ctx.app_id)
        rollback = facts.trusted is not None and facts.trusted.rollback
        evidence: dict[str, list[Evidence]] = {}
        looked: set[tuple[str, str, str, str | None]] = set()
        for change in changes:
            key = (change.service, change.environment, change.new_digest or "",
                   change.canonical)
            if change.new_digest is None or change.resolution_error is not None or key in looked:
                continue
            looked.add(key)
            env = policy.environments[change.environment]
            found = await finder.for_digest(change.service, env, change.new_digest,
                                            image=change.image)
            if rollback:
                found += await finder.history(change.service, change.environment,
                                              change.new_digest, image=change.image)
            # Evidence is about one name: the same digest under another name is another image.
            evidence.setdefault(change.new_digest, []).extend(
                item if item.image is not None else replace(item, image=change.canonical)
                for item in found)
        envs = {change.environment for change in changes} | {
            p.environment for p in problems if p.environment in policy.environments}
        rules = {
            name: EnvironmentRules(
                name=name, after=policy.environments[name].after or "",
                evidence=policy.environments[name].evidence, soak=policy.environments[name].soak,
                approvals=policy.environments[name].approvals,
                allow_self_approval=policy.environments[name].allow_self_approval,
                earlier=policy.chain_before(policy.environments[name].after),
            ) for name in envs
        }
        now = self.ctx.clock()
        held, hold_url = await self._hold(gh, repo.full_name, facts)
        return evaluate_gate(GateInput(
            changes=tuple(changes), rules=rules,
            evidence={digest: tuple(items) for digest, items in evidence.items()},
            rollback=rollback, problems=tuple(problems), evidence_notes=dict(finder.notes),
            failures={digest: tuple(marks) for digest, marks in finder.failures.items()},
            reviews=tuple(await self._reviews(gh, repo, policy, facts, envs)),
            head_sha=facts.head_sha, pr_author=facts.author,
            requester=facts.trusted.requester if facts.trusted else None,
            held=held, hold_url=hold_url,
            freeze_until={name: freeze_status(policy.environments[name].freeze, now)
                          for name in envs},
            now=now,
        ))

    async def _changes(self, gh: GitHubAPI, repo: DeploymentRepo, policy: Policy,
                       facts: PullFacts) -> tuple[list[ImageChange], list[FileProblem]]:
        changes: list[ImageChange] = []
        problems: list[FileProblem] = []
        listed = 0
        async for changed in gh.getiter(
            f"/repos/{repo.full_name}/pulls/{facts.number}/files?per_page=100"
        ):
            listed += 1
            path = changed["filename"]
            previous = changed.get("previous_filename")
            owners = gated_owners(policy, path)
            former = gated_owners(policy, previous) if previous else []
            status = changed.get("status")
            if status == "renamed" and (owners or former):
                for _, env in owners or former:
                    problems.append(FileProblem(env.name, previous or path,
                                                f"renamed to {path}: the gate cannot judge a "
                                                "moved gated file"))
                continue
            if not owners:
                continue
            if status == "removed":
                problems += [FileProblem(env.name, path, "deleted: the gate cannot judge a "
                                         "removed gated file") for _, env in owners]
                continue
            try:
                new = await get_file(gh, repo.full_name, path, facts.head_sha, strict=True)
                old = await get_file(gh, repo.full_name, path, facts.base_sha, strict=True)
            except UnreadableFile as exc:
                problems += [FileProblem(env.name, path, f"cannot be read: {exc}")
                             for _, env in owners]
                continue
            tag_keys = tuple(dict.fromkeys(s.tag_key for s, _ in owners if s.tag_key))
            new_text, old_text = new.text if new else "", old.text if old else ""
            try:
                after = await run_cpu(len(new_text), deploy_references, new_text, path=path,
                                      tag_keys=tag_keys)
            except ManifestError as exc:
                problems += [FileProblem(env.name, path, f"line {exc.line}: {exc.message}")
                             for _, env in owners]
                continue
            try:
                base_refs = await run_cpu(len(old_text), deploy_references, old_text, path=path,
                                          tag_keys=tag_keys)
            except ManifestError:
                base_refs = []  # an unreadable base: every reference counts as changed
            before = {r.identity for r in base_refs}
            problems += [FileProblem(env.name, path, removed) for removed in _removed(
                base_refs, after) for _, env in owners]
            changed_refs = list({r.identity: r for r in after if r.identity not in before}
                                .values())
            for reference in changed_refs:
                service, environment = _judging_owner(policy, owners, reference)
                if reference.problem is not None:
                    # Not an image the gate can look up: a name that does not parse, a
                    # registry override, another source of manifests.
                    problems.append(FileProblem(environment, path,
                                                f"line {reference.line}: {reference.problem}"))
                    continue
                changes.append(await self._image_change(gh, policy, service, environment,
                                                        path, reference, facts))
        total = facts.changed_files
        # A PR read from a list has no changed_files: a full listing is then taken as cut off.
        if (total > listed) if total is not None else listed >= MAX_LISTED_FILES:
            changed = f"{total}" if total is not None else f"at least {listed}"
            problems.append(FileProblem(
                "every gated environment", "the pull request",
                f"changes {changed} files and GitHub lists only the first {listed}: files past "
                "them cannot be judged; split the pull request"))
        return changes, problems

    async def _image_change(self, gh: GitHubAPI, policy: Policy, service: str,
                            environment: str, path: str, reference: ImageReference,
                            facts: PullFacts) -> ImageChange:
        owner = _service_of(policy, reference.canonical_name)
        digest, error = reference.digest, None
        if digest is None:
            if reference.tag is None:
                error = "neither a tag nor a digest"
            elif not image_allowed(reference.name, policy.allowed_images):
                # a pull request never makes Conveyor contact a registry the policy does not name
                error = f"tag {reference.tag} is not looked up outside allowed_images"
            else:
                try:
                    digest = await registry_digest(self.ctx, gh, reference.name, reference.tag)
                except Exception as exc:  # any lookup failure fails the gate, never the check
                    error = f"tag {reference.tag} could not be looked up: {error_text(exc)}"
                else:
                    if digest is None:
                        error = f"tag {reference.tag} resolves to no digest"
        admitted, tags_text = await self._tags_rule(gh, policy, owner, environment,
                                                    reference, digest)
        problem = None
        if owner is not None and owner == service and error is None:
            problem = await self._attestation_problem(gh, policy, service, environment, digest,
                                                      facts)
        return ImageChange(
            service=service, environment=environment, path=path, line=reference.line,
            image=reference.name, new_tag=reference.tag, new_digest=digest,
            resolution_error=error,
            allowed=image_allowed(reference.name, policy.allowed_images),
            tag_admitted=admitted, attestation_problem=problem,
            owned=owner == service, canonical=reference.canonical_name, tags_text=tags_text,
        )

    async def _tags_rule(self, gh: GitHubAPI, policy: Policy, owner: str | None,
                         environment: str, reference: ImageReference, digest: str | None
                         ) -> tuple[bool, str | None]:
        """The environment's ``tags`` against the versions the registry gives the digest."""
        env_tags = policy.environments[environment].tags
        if env_tags is None:
            return True, f"{environment} has no tags rule"
        if owner is None:
            return True, f"{environment}'s tags rule is about its services' images"
        rules = policy.tag_policy_for(owner, environment)
        if digest is None:
            return False, f"without a digest, the version admitted by {env_tags} is unknown"
        try:
            versions = await registry_versions(self.ctx, gh, reference.name, digest)
        except Exception as exc:  # any lookup failure fails the gate, never the check
            return False, (f"the registry's versions of {short_digest(digest)} could not be "
                           f"looked up: {error_text(exc)}")
        admitted = [v for v in versions if all(rule.admits(v) for rule in rules)]
        if admitted:
            return True, f"version {admitted[0]} is admitted in {environment}"
        carried = ", ".join(versions[:5]) if versions else "no tag"
        return False, (f"{short_digest(digest)} carries {carried} in the registry: no version "
                       f"admitted in {environment} by {env_tags}")

    async def _attestation_problem(self, gh: GitHubAPI, policy: Policy, service: str,
                                   environment: str, digest: str | None, facts: PullFacts
                                   ) -> str | None:
        if digest is None:
            return None
        source = policy.services[service].source
        required = policy.environments[environment].require_attestation
        # A 404 is never conditional: without this memory every re-evaluation (and every idle
        # resync) would pay two requests for an image whose CI does not attest. Where an
        # attestation is required, ask every time: it may have been published since.
        if not required and (source.lower(), digest) in self._unattested:
            return None
        try:
            attested = await find_attestation(gh, source, digest)
        except gidgethub.GitHubException:
            attested = None
        if attested is None:
            self._unattested[(source.lower(), digest)] = True
            if required:
                return f"no attestation found for {short_digest(digest)} in {source}"
            return None
        expected_commit = facts.trusted.source_sha if facts.trusted else None
        return attestation_problem(attested_repo=attested.repository,
                                   attested_commit=attested.commit, expected_repo=source,
                                   expected_commit=expected_commit)

    async def _reviews(self, gh: GitHubAPI, repo: DeploymentRepo, policy: Policy,
                       facts: PullFacts, envs: set[str]) -> list[Review]:
        approvers = sorted({a for name in envs for a in policy.environments[name].approvers})
        if not any(policy.environments[name].approvals for name in envs):
            return []
        reviews = []
        async for review in gh.getiter(
            f"/repos/{repo.full_name}/pulls/{facts.number}/reviews?per_page=100"
        ):
            user = review.get("user") or {}
            login = user.get("login", "")
            if review.get("state") not in ("APPROVED", "CHANGES_REQUESTED"):
                continue
            reviews.append(Review(
                user=login, state=review["state"], commit_id=review.get("commit_id", ""),
                submitted_at=_time(review.get("submitted_at")), is_bot=is_bot(user),
                is_approver=await self._is_approver(gh, repo.full_name, login, approvers),
                url=review.get("html_url", ""),
            ))
        return reviews

    async def _is_approver(self, gh: GitHubAPI, repo: str, user: str, approvers: list[str]
                           ) -> bool:
        key = (repo.lower(), user.lower(), ",".join(approvers))
        if key in self._approvers:
            return self._approvers[key]
        if not approvers:
            result = await permission_of(gh, repo, user) in WRITE_PERMISSIONS
        else:
            result = user.lower() in {a.lower() for a in approvers if not a.startswith("@")}
            for team in (a for a in approvers if a.startswith("@")):
                if result:
                    break
                org, _, slug = team[1:].partition("/")
                result = await is_team_member(gh, org, slug, user)
        self._approvers[key] = result
        return result

    async def _hold(self, gh: GitHubAPI, repo: str, facts: PullFacts
                    ) -> tuple[str | None, str | None]:
        if HOLD_LABEL not in facts.labels:
            return None, None
        reason, url = "", None
        async for item in gh.getiter(f"/repos/{repo}/issues/{facts.number}/comments?per_page=100"):
            body = item.get("body") or ""
            # Only Conveyor's own comments count; the reason is the rest of the marker's line.
            user = item.get("user") or {}
            own = user.get("login") == self.ctx.bot_login if self.ctx.bot_login else is_bot(user)
            if HOLD_MARKER in body and own:
                reason = body.split(HOLD_MARKER, 1)[1].split("\n", 1)[0].strip()
                reason = reason.removeprefix("Reason:").strip()
                url = item.get("html_url")
        return reason, url

    async def post(self, gh: GitHubAPI, repo: str, sha: str, verdict: Verdict
                   ) -> None:
        """Create or update the one gate check run of this head commit; skip if unchanged."""
        output = render_gate_output(verdict)
        fingerprint = hashlib.sha256(json.dumps(
            [verdict.status, verdict.conclusion, output], sort_keys=True).encode()).hexdigest()
        key = (repo.lower(), sha)
        known = self._posted.get(key)
        if known is not None and known[1] == fingerprint:
            return
        data = check_run(GATE_CHECK, output, status=verdict.status,
                         conclusion=verdict.conclusion, completed_at=self.ctx.clock())
        run_id = known[0] if known else await self._existing_run(gh, repo, sha)
        if run_id is None:
            run_id = int((await create_check_run(gh, repo, sha, data))["id"])
        else:
            await update_check_run(gh, repo, run_id, data)
        self._posted[key] = (run_id, fingerprint)

    async def _existing_run(self, gh: GitHubAPI, repo: str, sha: str
                            ) -> int | None:
        """Our own gate run on this commit (another app's run of the same name is ignored)."""
        runs = await gh.getitem(f"/repos/{repo}/commits/{sha}/check-runs?check_name={GATE_CHECK}"
                                "&filter=latest")
        own_slug = self.ctx.bot_login.removesuffix("[bot]")
        for run in runs.get("check_runs") or []:
            slug = (run.get("app") or {}).get("slug")
            if run.get("name") == GATE_CHECK and (not own_slug or slug == own_slug):
                return int(run["id"])
        return None

    async def _auto_merge(self, gh: GitHubAPI, repo: DeploymentRepo,
                          facts: PullFacts, verdict: Verdict) -> None:
        trusted = facts.trusted
        if verdict.conclusion != "success":
            return
        if trusted is None:
            # A marker can be copied into any PR body: only PRs this app opened auto-merge.
            return
        env = repo.policy.environments.get(trusted.environment)
        if env is None or not env.auto_merge or not env.gated:
            return
        if not trusted.head:
            log.info("not auto-merging: someone pushed to the promotion PR",
                     extra={"pull": facts.number})
            return
        await merge_promotion(self.ctx, gh, repo.full_name, facts.number, facts.head_sha,
                              env.merge_method, gated=True)


def _removed(before: list[ImageReference], after: list[ImageReference]) -> list[str]:
    """Images the base sets and the head no longer names at all: what runs instead comes from
    outside the file (a base, the chart's defaults), which the gate cannot judge."""
    names = {r.canonical_name for r in after}
    gone = {r.canonical_name: r for r in before if r.canonical_name not in names}
    return [f"line {r.line} of the base set {r}; the head no longer sets {r.name}, so what "
            "runs instead comes from outside this file" for r in gone.values()]


def gated_owners(policy: Policy, path: str) -> list[tuple[Service, Environment]]:
    return [(s, e) for s, e in policy.environment_for_path(path) if e.gated]


def _service_of(policy: Policy, canonical: str) -> str | None:
    """The policy service whose image this is, if any."""
    for service in policy.services.values():
        if same_image(service.image, canonical):
            return service.name
    return None


def _judging_owner(policy: Policy, owners: list[tuple[Service, Environment]],
                   reference: ImageReference) -> tuple[str, str]:
    """Which of the file's (service, environment) owners judges a reference: the service
    whose image it is when that service owns the file, else the first owner."""
    service = _service_of(policy, reference.canonical_name)
    for owner, env in owners:
        if owner.name == service:
            return owner.name, env.name
    return owners[0][0].name, owners[0][1].name


async def registry_digest(ctx: Context, gh: GitHubAPI, image: str, tag: str) -> str | None:
    """The digest ``image:tag`` names in its registry (None: no such tag)."""
    found = await ctx.images.find_by_tags(image, [tag])
    return found.digest if found else None


async def registry_versions(ctx: Context, gh: GitHubAPI, image: str, digest: str
                            ) -> list[str]:
    """The tags that point at ``digest`` in the image's registry."""
    return await ctx.images.tags_of(image, digest)


def _time(value: str | None) -> datetime:
    return parse_time(value) if value else datetime.min.replace(tzinfo=UTC)


async def keep_hold(ctx: Context, gh: GitHubAPI, repo: str, number: int,
                    payload: dict[str, Any]) -> None:
    """Put `conveyor/hold` back when someone without write permission removed it.

    GitHub lets triage users manage labels; lifting a hold is `/unhold`'s job, which needs
    write, maintain or admin permission like every command."""
    if (payload.get("label") or {}).get("name") != HOLD_LABEL:
        return
    sender = payload.get("sender") or {}
    login = str(sender.get("login") or "")
    if not login or (ctx.bot_login and login.lower() == ctx.bot_login.lower()):
        return
    if await permission_of(gh, repo, login) in WRITE_PERMISSIONS:
        return
    current = await gh.getitem(f"/repos/{repo}/pulls/{number}")
    if current.get("state") != "open" or HOLD_LABEL in {
            label.get("name") for label in current.get("labels") or []}:
        return
    await add_labels(gh, repo, number, [HOLD_LABEL])
    await comment(gh, repo, number, (
        f"⏸️ @{login} removed `{HOLD_LABEL}` without write permission on the repository, so "
        f"the hold stays. Someone with write access lifts it with `/unhold`."))
    log.info("hold label put back", extra={"pull": number, "sender": login})
