"""What a pull request changes in the renders of gated environments, read for the gate.

A pull request changes a render when one of the files it changes is among the files the
render reads at the PR's base or head (`bot.render.reads`): for an overlay, anything below
one of its kustomizations' folders (the overlay, a patch, a base shared by several
environments, a component); for a chart, anything below the chart's folder (a template,
`_helpers.tpl`, the default `values.yaml`, `Chart.yaml`, a vendored subchart) and its value
files — whatever its path, policy path or not. Each such render is run at both commits; every
image a workload runs at the head that the base render did not run is judged as an image
change of the environment (allowed, pinned, tags, evidence), naming the workloads. A render
that cannot be run fails the gate (closed); so does a change to a gated chart's own files
while no Helm is configured, and a render whose kustomization or `Chart.yaml` the base changed
after the PR's branch was made (the head's render is not what the merge makes). What each
render's resources change is kept for the reviewers' diff.
"""

from __future__ import annotations

import asyncio
import posixpath
from dataclasses import dataclass, field, replace

from gidgethub.abc import GitHubAPI

from bot.domain.gate.model import BuildFinding, ImageChange
from bot.domain.images import canonical_image_name, parse_image_ref
from bot.domain.policy import Policy
from bot.github.snapshot import TreeTruncated
from bot.manifests.references import ImageReference
from bot.promotion.builds import BUILT_AHEAD, EnvironmentRender, RepoBuilds
from bot.promotion.gate.changes import ChangedFile, ChangeReader, service_of
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.render.build import BuildResult
from bot.render.charts import CHART_FILE
from bot.render.diff import RenderDiff, compare
from bot.render.inputs import KUSTOMIZATION_NAMES, TreeIndex
from bot.render.targets import ChartTarget
from bot.render.workloads import WorkloadChange, image_changes

RENDERED_SHAPE = "build"
# What decides which files a render reads: the kustomizations it reaches, a chart's own files.
STRUCTURE_FILES = (*KUSTOMIZATION_NAMES, CHART_FILE, "requirements.yaml")


@dataclass
class BuildChanges:
    changes: list[ImageChange]
    findings: list[BuildFinding]
    # per reached environment: a title and what its rendered resources change
    diffs: list[tuple[str, RenderDiff]] = field(default_factory=list)


async def read_build_changes(reader: ChangeReader, gh: GitHubAPI, repo: DeploymentRepo,
                             facts: PullFacts, files: list[ChangedFile],
                             judged: list[ImageChange]) -> BuildChanges:
    """The image changes of every gated render the PR's ``files`` reach; ``judged`` are the
    changes already read from gated files (the same image is not judged twice)."""
    found = BuildChanges([], [])
    if not files:
        return found
    builds = RepoBuilds(reader.ctx, gh, repo.full_name, repo.default_branch)
    policy = repo.policy
    try:
        head = await builds.index(facts.head_sha)
        moved = any(f.status in ("removed", "renamed") for f in files)
        base = await builds.index(facts.base_sha) if moved or _may_render(head, files) else None
        if base is None:
            return found  # no changed file lies below any kustomization or chart
        renders = await _gated_renders(builds, policy, facts)
    except TreeTruncated as exc:
        # Which files a render reads is unknown: every gated environment whose file is a
        # kustomization fails closed (a tree this large is rare; a Helm or plain-manifest
        # repository of that size keeps its file-level gate).
        envs = {env.name for env in policy.environments.values() if env.gated for service
                in policy.services if posixpath.basename(policy.path_for(service, env.name))
                in KUSTOMIZATION_NAMES}
        found.findings += [BuildFinding(env, ".", problem=str(exc)) for env in sorted(envs)]
        return found
    paths = [p for f in files for p in (f.path, f.previous) if p]
    if len(renders) > 1:
        for commit in (facts.head_sha, facts.base_sha):
            await builds.prefetch_walks(commit)
    reached: list[EnvironmentRender] = []
    inputs: dict[str, set[str]] = {facts.head_sha: set(), facts.base_sha: set()}
    for render in renders:
        read = await _reaches(builds, facts, render, paths, head, base)
        if not read:
            continue
        moved_on = await _moved_on_base(builds, facts, read, set(paths))
        if moved_on is not None:
            found.findings.append(_behind(render, moved_on, repo.default_branch))
            continue
        reached.append(render)
        for commit, files_read in read.items():
            inputs[commit] |= files_read
    judging = [render for render in reached if builds.renders(render.target)]
    for render in reached:
        if render not in judging:
            found.findings.append(_not_rendered(policy, render, paths))
    if len(judging) > 1:  # many renders: their files in one read per commit
        for commit, files_read in inputs.items():
            await builds.prefetch(commit, files_read)
    for start in range(0, len(judging), BUILT_AHEAD):
        group = judging[start:start + BUILT_AHEAD]
        if len(group) > 1:  # rendered at both commits at once, then judged from the cache
            targets = [render.target for render in group]
            await asyncio.gather(builds.build_all(facts.head_sha, targets),
                                 builds.build_all(facts.base_sha, targets))
        for render in group:
            await _judge(reader, gh, policy, builds, facts, render, judged, found)
    return found


def _may_render(index: TreeIndex, files: list[ChangedFile]) -> bool:
    """Whether any changed file has a kustomization or a ``Chart.yaml`` in its folder or a
    folder above."""
    for changed in files:
        if posixpath.basename(changed.path) in (*KUSTOMIZATION_NAMES, CHART_FILE):
            return True
        folder = posixpath.dirname(changed.path)
        while True:
            if index.kustomization_in(folder) is not None or (
                    posixpath.join(folder, CHART_FILE) if folder else CHART_FILE) in index.sizes:
                return True
            if not folder:
                break
            folder = posixpath.dirname(folder)
    return False


async def _gated_renders(builds: RepoBuilds, policy: Policy, facts: PullFacts
                         ) -> list[EnvironmentRender]:
    """The gated environments' renders at the head, and those only the base has."""
    found = {(r.environment, r.target): r
             for r in await builds.environments(facts.head_sha, policy, gated_only=True)}
    for render in await builds.environments(facts.base_sha, policy, gated_only=True):
        found.setdefault((render.environment, render.target), render)
    return list(found.values())


async def _reaches(builds: RepoBuilds, facts: PullFacts, render: EnvironmentRender,
                   paths: list[str], head: TreeIndex, base: TreeIndex) -> dict[str, set[str]]:
    """The files the render reads at each commit, when a changed path is among them at
    either; empty when the change does not reach the render."""
    read: dict[str, set[str]] = {}
    reached = False
    for commit, index in ((facts.head_sha, head), (facts.base_sha, base)):
        if _present(index, render):
            inputs = await builds.inputs(commit, render.target)
            read[commit] = set(inputs.files)
            reached = reached or any(inputs.reads(path) for path in paths)
    return read if reached else {}


async def _moved_on_base(builds: RepoBuilds, facts: PullFacts, read: dict[str, set[str]],
                         changed: set[str]) -> str | None:
    """A file that says which files the render reads (a kustomization, a chart's
    `Chart.yaml`), differs between the PR's head and its base, and is not changed by the PR;
    None when there is none. The base changed it after the branch was made: the merge may
    read the PR's files where the head's render did not, so the head is not what the merge
    makes. (Other inputs the base changed were judged when they were merged, and reading
    them does not change which of the PR's files count.)"""
    head, base = await builds.blobs(facts.head_sha), await builds.blobs(facts.base_sha)
    for path in sorted(set().union(*read.values()) - changed):
        if posixpath.basename(path) in STRUCTURE_FILES and head.get(path) != base.get(path):
            return path
    return None


def _behind(render: EnvironmentRender, moved_on: str, branch: str) -> BuildFinding:
    return BuildFinding(render.environment, render.where, kind=render.kind, problem=(
        f"`{moved_on}`, which this environment's render reads, changed on `{branch}` after "
        "this branch was made: the head is not what the merge makes. Update the branch "
        f"with `{branch}` and the gate judges the result"))


def _present(index: TreeIndex, render: EnvironmentRender) -> bool:
    target = render.target
    if isinstance(target, ChartTarget):
        return (posixpath.join(target.chart, CHART_FILE) if target.chart else CHART_FILE) \
            in index.sizes
    return index.kustomization_in(target.folder) is not None


def _not_rendered(policy: Policy, render: EnvironmentRender, paths: list[str]) -> BuildFinding:
    """A reached render whose tool is off: an overlay's files are judged as files; a chart's
    own files (templates, defaults, subcharts) cannot be judged at all."""
    if not isinstance(render.target, ChartTarget):
        return BuildFinding(render.environment, render.where, rendering_off=True)
    own = {policy.path_for(service, render.environment) for service in render.services}
    others = sorted(path for path in paths if path not in own and (
        not render.target.chart or path.startswith(render.target.chart + "/")))
    if not others:
        return BuildFinding(render.environment, render.where, rendering_off=True,
                            kind="render")
    return BuildFinding(render.environment, render.where, kind="render", problem=(
        f"`{others[0]}` changes the chart, and chart rendering is off (no helm): what the "
        "environment runs with it cannot be rendered"))


async def _judge(reader: ChangeReader, gh: GitHubAPI, policy: Policy, builds: RepoBuilds,
                 facts: PullFacts, render: EnvironmentRender, judged: list[ImageChange],
                 found: BuildChanges) -> None:
    env = render.environment
    after = await builds.build(facts.head_sha, render.target)
    if after.images is None:
        found.findings.append(BuildFinding(env, render.where, problem=after.error,
                                           kind=render.kind))
        return
    before = await builds.build(facts.base_sha, render.target)
    diff = compare(before.resources if before.images is not None else None, after.resources)
    if diff.empty:
        return  # the files it reads changed, what it renders did not: nothing to judge
    found.diffs.append((f"{env}: {render.target.describe()}", diff))
    # A base that does not render ran nothing Conveyor knows of: every image counts as new.
    changed = image_changes(dict(before.images or {}), dict(after.images))
    found.findings.append(BuildFinding(env, render.where, changes=tuple(str(c) for c in changed),
                                       kind=render.kind))
    await judge_images(reader, gh, policy, facts, env, render.where, render.services, before,
                       changed, judged, found)


async def judge_images(reader: ChangeReader, gh: GitHubAPI, policy: Policy, facts: PullFacts,
                       env: str, where: str, services: tuple[str, ...],
                       before: BuildResult | None, changed: list[WorkloadChange],
                       judged: list[ImageChange], found: BuildChanges) -> None:
    """Every image ``changed`` sets that no workload ran ``before``, judged for ``env``."""
    ran = set((before.images or {}).values()) if before is not None else set()
    by_image: dict[str, list[WorkloadChange]] = {}
    for slot_change in changed:
        if slot_change.new not in ran:
            by_image.setdefault(slot_change.new, []).append(slot_change)
    for image, slots in by_image.items():
        reference = _reference(image)
        if _already_judged([*judged, *found.changes], env, reference):
            continue
        service = _owner(policy, services, reference)
        workload = "; ".join(str(c.slot) for c in slots)
        if reference.problem is not None:
            found.changes.append(ImageChange(
                service=service, environment=env, path=where, line=0, image=image,
                new_tag=None, new_digest=None, resolution_error=reference.problem,
                allowed=False, tag_admitted=False, owned=False, workload=workload))
            continue
        change = await reader.image_change(gh, policy, service, env, where, reference, facts)
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


def _owner(policy: Policy, services: tuple[str, ...], reference: ImageReference) -> str:
    """The service of the render whose image this is, else the render's first service."""
    owner = service_of(policy, reference.canonical_name)
    return owner if owner in services else services[0]
