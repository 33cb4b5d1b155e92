"""What a pull request changes in the builds of gated Kustomize environments, read for the gate.

A pull request changes a build when one of the files it changes lies below one of the
build's roots at the PR's base or head (`bot.render.inputs`): the overlay, a patch, a base
shared by several environments, a component — whatever its path, policy path or not. Each
such build is run at both commits; every image a workload runs at the head that the base
build did not run is judged as an image change of the environment (allowed, pinned, tags,
evidence), naming the workloads. A build that cannot be run fails the gate (closed).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace

from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import BuildFinding, ImageChange
from bot.domain.images import canonical_image_name, parse_image_ref
from bot.domain.policy import Policy
from bot.github.snapshot import TreeTruncated
from bot.manifests.references import ImageReference
from bot.promotion.builds import EnvironmentOverlay, RepoBuilds
from bot.promotion.gate.changes import ChangedFile, ChangeReader, service_of
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.render.inputs import KUSTOMIZATION_NAMES, TreeIndex
from bot.render.workloads import WorkloadChange, image_changes

RENDERED_SHAPE = "build"


@dataclass
class BuildChanges:
    changes: list[ImageChange]
    findings: list[BuildFinding]


async def read_build_changes(reader: ChangeReader, gh: GitHubAPI, repo: DeploymentRepo,
                             facts: PullFacts, files: list[ChangedFile],
                             judged: list[ImageChange]) -> BuildChanges:
    """The image changes of every gated build the PR's ``files`` reach; ``judged`` are the
    changes already read from gated files (the same image is not judged twice)."""
    found = BuildChanges([], [])
    if not files:
        return found
    builds = RepoBuilds(reader.ctx, gh, repo.full_name)
    policy = repo.policy
    try:
        head = await builds.index(facts.head_sha)
        moved = any(f.status in ("removed", "renamed") for f in files)
        base = await builds.index(facts.base_sha) if moved or _may_build(head, files) else None
        if base is None:
            return found  # no changed file lies below any kustomization
        overlays = await _gated_overlays(builds, policy, facts)
    except TreeTruncated as exc:
        # Which files a build reads is unknown: every gated environment whose file is a
        # kustomization fails closed (a tree this large is rare; a Helm or plain-manifest
        # repository of that size keeps its file-level gate).
        envs = {env.name for env in policy.environments.values() if env.gated for service
                in policy.services if posixpath.basename(policy.path_for(service, env.name))
                in KUSTOMIZATION_NAMES}
        found.findings += [BuildFinding(env, ".", problem=str(exc)) for env in sorted(envs)]
        return found
    paths = [p for f in files for p in (f.path, f.previous) if p]
    if len(overlays) > 1:
        for commit in (facts.head_sha, facts.base_sha):
            await builds.prefetch_kustomizations(commit)
    reached: list[EnvironmentOverlay] = []
    inputs: dict[str, set[str]] = {facts.head_sha: set(), facts.base_sha: set()}
    for overlay in overlays:
        read = await _reaches(builds, facts, overlay.overlay, paths, head, base)
        if read:
            reached.append(overlay)
            for commit, files_read in read.items():
                inputs[commit] |= files_read
    if not builds.rendering:
        found.findings += [BuildFinding(o.environment, o.overlay, rendering_off=True)
                           for o in reached]
        return found
    if len(reached) > 1:  # many builds: their files in one read per commit
        for commit, files_read in inputs.items():
            await builds.prefetch(commit, files_read)
    for overlay in reached:
        await _judge(reader, gh, policy, builds, facts, overlay, judged, found)
    return found


def _may_build(index: TreeIndex, files: list[ChangedFile]) -> bool:
    """Whether any changed file has a kustomization in its folder or a folder above."""
    for changed in files:
        folder = posixpath.dirname(changed.path)
        while True:
            if index.kustomization_in(folder) is not None:
                return True
            if not folder:
                break
            folder = posixpath.dirname(folder)
        if posixpath.basename(changed.path) in KUSTOMIZATION_NAMES:
            return True
    return False


async def _gated_overlays(builds: RepoBuilds, policy: Policy, facts: PullFacts
                          ) -> list[EnvironmentOverlay]:
    """The gated environments' overlays at the head, and those only the base has."""
    found = {(o.environment, o.overlay): o
             for o in await builds.overlays(facts.head_sha, policy, gated_only=True)}
    for overlay in await builds.overlays(facts.base_sha, policy, gated_only=True):
        found.setdefault((overlay.environment, overlay.overlay), overlay)
    return list(found.values())


async def _reaches(builds: RepoBuilds, facts: PullFacts, overlay: str, paths: list[str],
                   head: TreeIndex, base: TreeIndex) -> dict[str, set[str]]:
    """The files the overlay's build reads at each commit, when a changed path is among
    them at either; empty when the change does not reach the build."""
    read: dict[str, set[str]] = {}
    reached = False
    for commit, index in ((facts.head_sha, head), (facts.base_sha, base)):
        if index.kustomization_in(overlay) is not None:
            inputs = await builds.inputs(commit, overlay)
            read[commit] = set(inputs.files)
            reached = reached or any(inputs.reads(path) for path in paths)
    return read if reached else {}


async def _judge(reader: ChangeReader, gh: GitHubAPI, policy: Policy, builds: RepoBuilds,
                 facts: PullFacts, overlay: EnvironmentOverlay, judged: list[ImageChange],
                 found: BuildChanges) -> None:
    env = overlay.environment
    after = await builds.build(facts.head_sha, overlay.overlay)
    if after.images is None:
        found.findings.append(BuildFinding(env, overlay.overlay, problem=after.error))
        return
    before = await builds.build(facts.base_sha, overlay.overlay)
    # A base that does not build ran nothing Conveyor knows of: every image counts as new.
    changed = image_changes(dict(before.images or {}), dict(after.images))
    found.findings.append(BuildFinding(env, overlay.overlay,
                                       changes=tuple(str(c) for c in changed)))
    ran = set((before.images or {}).values())
    by_image: dict[str, list[WorkloadChange]] = {}
    for slot_change in changed:
        if slot_change.new not in ran:
            by_image.setdefault(slot_change.new, []).append(slot_change)
    for image, slots in by_image.items():
        reference = _reference(image)
        if _already_judged(judged, env, reference):
            continue
        service = _owner(policy, overlay, reference)
        workload = "; ".join(str(c.slot) for c in slots)
        if reference.problem is not None:
            found.changes.append(ImageChange(
                service=service, environment=env, path=overlay.overlay, line=0, image=image,
                new_tag=None, new_digest=None, resolution_error=reference.problem,
                allowed=False, tag_admitted=False, owned=False, workload=workload))
            continue
        change = await reader.image_change(gh, policy, service, env, overlay.overlay,
                                           reference, facts)
        found.changes.append(replace(change, workload=workload))


def _reference(image: str) -> ImageReference:
    try:
        parsed = parse_image_ref(image)
    except ValueError as exc:
        return ImageReference(0, RENDERED_SHAPE, image, None, None,
                              problem=f"{image!r} is not an image reference: {exc}")
    return ImageReference(0, RENDERED_SHAPE, parsed.name, parsed.tag, parsed.digest)


def _already_judged(judged: list[ImageChange], env: str, reference: ImageReference) -> bool:
    if reference.problem is not None:
        return False
    name = reference.canonical_name
    return any(c.environment == env and _canonical(c.image) == name
               and c.new_digest is not None and c.new_digest == reference.digest
               for c in judged)


def _canonical(image: str) -> str:
    try:
        return canonical_image_name(image)
    except ValueError:
        return image


def _owner(policy: Policy, overlay: EnvironmentOverlay, reference: ImageReference) -> str:
    """The service of the overlay whose image this is, else the overlay's first service."""
    owner = service_of(policy, reference.canonical_name)
    return owner if owner in overlay.services else overlay.services[0]
