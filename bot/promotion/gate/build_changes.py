"""What a pull request changes in the renders of gated environments, read for the gate.

A pull request changes a render when one of the files it changes is among the files the
render reads before or after the merge (`bot.render.reads`): for an overlay, anything below
one of its kustomizations' folders (the overlay, a patch, a base shared by several
environments, a component); for a chart, anything below the chart's folder (a template,
`_helpers.tpl`, the default `values.yaml`, `Chart.yaml`, a vendored subchart) and its value
files — whatever its path, policy path or not. "Before" is the default branch as it is now;
"after" is what merging the PR into it makes (`merge_result`): the head when it holds the
branch, else their merge, so that a change the branch took meanwhile is judged together with
the PR's. Each such render is run at both; every image a workload runs after that it did not
run before is judged as an image change of the environment (allowed, pinned, tags, evidence),
naming the workloads. A render that cannot be run fails the gate (closed); so does a change to
a gated chart's own files while no Helm is configured, and a render that reads a file both the
branch and the PR changed differently (git merges its lines; neither render shows the result).
What each render's resources change is kept for the reviewers' diff.
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
from bot.promotion.gate.merge_result import MergeResult, merge_result
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.render.build import BuildResult
from bot.render.charts import CHART_FILE
from bot.render.diff import RenderDiff, compare
from bot.render.inputs import KUSTOMIZATION_NAMES, TreeIndex
from bot.render.targets import ChartTarget
from bot.render.workloads import WorkloadChange, image_changes

RENDERED_SHAPE = "build"


@dataclass
class BuildChanges:
    changes: list[ImageChange]
    findings: list[BuildFinding]
    # per reached environment: a title and what its rendered resources change
    diffs: list[tuple[str, RenderDiff]] = field(default_factory=list)
    merge: MergeResult | None = None  # what the merge makes, once read


async def read_build_changes(reader: ChangeReader, gh: GitHubAPI, repo: DeploymentRepo,
                             facts: PullFacts, files: list[ChangedFile],
                             judged: list[ImageChange], merge: MergeResult | None = None
                             ) -> BuildChanges:
    """The image changes of every gated render the PR's ``files`` reach; ``judged`` are the
    changes already read from gated files (the same image is not judged twice); ``merge``:
    the trees to judge between, else what merging the PR makes now."""
    found = BuildChanges([], [], merge=merge)
    if not files:
        return found
    builds = RepoBuilds(reader.ctx, gh, repo.full_name, repo.default_branch)
    policy = repo.policy
    try:
        merge = found.merge = await merge_result(gh, builds, repo, facts, found.merge)
        head, base = await builds.index(merge.after), await builds.index(merge.before)
        moved = any(f.status in ("removed", "renamed") for f in files)
        if not (moved or _may_render(head, files) or _may_render(base, files)):
            return found  # no changed file lies below any kustomization or chart
        renders = await _gated_renders(builds, policy, merge)
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
        for commit in (merge.after, merge.before):
            await builds.prefetch_walks(commit)
    reached: list[EnvironmentRender] = []
    inputs: dict[str, set[str]] = {merge.after: set(), merge.before: set()}
    for render in renders:
        read = await _reaches(builds, merge, render, paths, head, base)
        if not read:
            continue
        unjudged = merge.problem or merge.conflicting(set().union(*read.values()),
                                                      repo.default_branch)
        if unjudged is not None:
            found.findings.append(BuildFinding(render.environment, render.where,
                                               kind=render.kind, problem=unjudged))
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
            await asyncio.gather(builds.build_all(merge.after, targets),
                                 builds.build_all(merge.before, targets))
        for render in group:
            await _judge(reader, gh, policy, builds, facts, merge, render, judged, found)
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


async def _gated_renders(builds: RepoBuilds, policy: Policy, merge: MergeResult
                         ) -> list[EnvironmentRender]:
    """The gated environments' renders after the merge, and those only the base has."""
    found = {(r.environment, r.target): r
             for r in await builds.environments(merge.after, policy, gated_only=True)}
    for render in await builds.environments(merge.before, policy, gated_only=True):
        found.setdefault((render.environment, render.target), render)
    return list(found.values())


async def _reaches(builds: RepoBuilds, merge: MergeResult, render: EnvironmentRender,
                   paths: list[str], head: TreeIndex, base: TreeIndex) -> dict[str, set[str]]:
    """The files the render reads before and after the merge, when a changed path is among
    them at either; empty when the change does not reach the render."""
    read: dict[str, set[str]] = {}
    reached = False
    for commit, index in ((merge.after, head), (merge.before, base)):
        if _present(index, render):
            inputs = await builds.inputs(commit, render.target)
            read[commit] = set(inputs.files)
            reached = reached or any(inputs.reads(path) for path in paths)
    return read if reached else {}


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
                 facts: PullFacts, merge: MergeResult, render: EnvironmentRender,
                 judged: list[ImageChange], found: BuildChanges) -> None:
    env = render.environment
    after = await builds.build(merge.after, render.target)
    if after.images is None:
        found.findings.append(BuildFinding(env, render.where, problem=after.error,
                                           kind=render.kind))
        return
    before = await builds.build(merge.before, render.target)
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
