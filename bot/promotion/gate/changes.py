"""What a pull request changes in gated files, read for the gate: each new image reference with
its digest, admitted tags and attestation, and every file change the gate cannot judge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import AttestationFinding, FileProblem, ImageChange
from bot.domain.images import image_allowed, same_image
from bot.domain.policy import Environment, Policy, Service
from bot.github.repos import UnreadableFile, get_file
from bot.manifests import ManifestError
from bot.manifests.references import ImageReference, deploy_references
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.opening.attestations import check_attestation
from bot.promotion.policies import DeploymentRepo
from bot.runtime.offload import run_cpu
from bot.text import error_text, short_digest

if TYPE_CHECKING:
    from bot.runtime.context import Context

# "List pull requests files": responses include a maximum of 3000 files.
MAX_LISTED_FILES = 3000


@dataclass(frozen=True)
class ChangedFile:
    """One entry of the PR's file list."""

    path: str
    status: str  # "added" | "removed" | "modified" | "renamed" | "copied" | "changed"
    previous: str | None = None


@dataclass
class GatedChanges:
    changes: list[ImageChange]
    problems: list[FileProblem]
    files: list[ChangedFile]


@dataclass
class ChangeReader:
    """Reads the gated changes of pull requests."""

    ctx: Context

    async def read(self, gh: GitHubAPI, repo: DeploymentRepo, policy: Policy,
                   facts: PullFacts) -> GatedChanges:
        """The image changes of the PR's gated files, what the gate cannot judge, and every
        file the PR changes."""
        changes: list[ImageChange] = []
        problems: list[FileProblem] = []
        touched: list[ChangedFile] = []
        listed = 0
        async for changed in gh.getiter(
            f"/repos/{repo.full_name}/pulls/{facts.number}/files?per_page=100"
        ):
            listed += 1
            path = changed["filename"]
            previous = changed.get("previous_filename")
            touched.append(ChangedFile(path, str(changed.get("status") or "modified"),
                                       previous))
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
                changes.append(await self.image_change(gh, policy, service, environment,
                                                       path, reference, facts))
        total = facts.changed_files
        # A PR read from a list has no changed_files: a full listing is then taken as cut off.
        if (total > listed) if total is not None else listed >= MAX_LISTED_FILES:
            changed = f"{total}" if total is not None else f"at least {listed}"
            problems.append(FileProblem(
                "every gated environment", "the pull request",
                f"changes {changed} files and GitHub lists only the first {listed}: files past "
                "them cannot be judged; split the pull request"))
        return GatedChanges(changes, problems, touched)

    async def image_change(self, gh: GitHubAPI, policy: Policy, service: str,
                            environment: str, path: str, reference: ImageReference,
                            facts: PullFacts) -> ImageChange:
        owner = service_of(policy, reference.canonical_name)
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
        attestation = None
        if owner is not None and owner == service and error is None:
            attestation = await self._attestation(gh, policy, service, environment, digest,
                                                  facts)
        return ImageChange(
            service=service, environment=environment, path=path, line=reference.line,
            image=reference.name, new_tag=reference.tag, new_digest=digest,
            resolution_error=error,
            allowed=image_allowed(reference.name, policy.allowed_images),
            tag_admitted=admitted, attestation=attestation,
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

    async def _attestation(self, gh: GitHubAPI, policy: Policy, service: str,
                           environment: str, digest: str | None, facts: PullFacts
                           ) -> AttestationFinding | None:
        """The attestation condition where the environment requires one. Asked every time:
        an attestation may have been published since, and a verdict is kept by bundle."""
        if digest is None or not policy.environments[environment].require_attestation:
            return None
        settings = policy.services[service]
        check = await check_attestation(
            gh, self.ctx.attestations, web_url=self.ctx.web_url, source=settings.source,
            digest=digest, signer=settings.signer_workflow,
            expected_commit=facts.trusted.source_sha if facts.trusted else None, lenient=True)
        build = check.build
        if build is None:
            return AttestationFinding(False, check.problem(digest, settings.source))
        commit = f" at commit {build.commit[:12]}" if build.commit else ""
        return AttestationFinding(True, f"attested: built by {build.workflow}{commit}, "
                                        f"verified against the {build.root} root")


def _removed(before: list[ImageReference], after: list[ImageReference]) -> list[str]:
    """Images the base sets and the head no longer names at all: what runs instead comes from
    outside the file (a base, the chart's defaults), which the gate cannot judge."""
    names = {r.canonical_name for r in after}
    gone = {r.canonical_name: r for r in before if r.canonical_name not in names}
    return [f"line {r.line} of the base set {r}; the head no longer sets {r.name}, so what "
            "runs instead comes from outside this file" for r in gone.values()]


def gated_owners(policy: Policy, path: str) -> list[tuple[Service, Environment]]:
    return [(s, e) for s, e in policy.environment_for_path(path) if e.gated]


def service_of(policy: Policy, canonical: str) -> str | None:
    """The policy service whose image this is, if any."""
    for service in policy.services.values():
        if same_image(service.image, canonical):
            return service.name
    return None


def _judging_owner(policy: Policy, owners: list[tuple[Service, Environment]],
                   reference: ImageReference) -> tuple[str, str]:
    """Which of the file's (service, environment) owners judges a reference: the service
    whose image it is when that service owns the file, else the first owner."""
    service = service_of(policy, reference.canonical_name)
    for owner, env in owners:
        if owner.name == service:
            return owner.name, env.name
    return owners[0][0].name, owners[0][1].name


async def registry_digest(ctx: Context, gh: GitHubAPI, image: str, tag: str) -> str | None:
    """The digest ``image:tag`` names in its registry now (None: no such tag): the gate asks
    every time, so a tag pushed again is judged by its new digest at once."""
    found = await ctx.images.find_by_tags(image, [tag], revalidate=True)
    return found.digest if found else None


async def registry_versions(ctx: Context, gh: GitHubAPI, image: str, digest: str
                            ) -> list[str]:
    """The tags that point at ``digest`` in the image's registry."""
    return await ctx.images.tags_of(image, digest)
