"""The renders of a deployment repository's environments, at commits of GitHub.

An environment's file names what renders it: the Kustomize overlay it belongs to (a
kustomization in its folder), else the chart above it (a ``Chart.yaml`` at or above a values
file), else nothing (judged as a file). Trees are read by commit and file texts by blob sha
through the app's shared `RepoFiles` (a cold read of many files is one archive request); what
a render reads is worked out by `bot.render.reads` and the render itself runs in
`bot.render.build`, keyed by what is rendered and the blob sha of every file it reads, so the
same inputs at another commit are not rendered again.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Policy
from bot.github.repos import MAX_FILE_BYTES, FileTooLarge, RepoFile
from bot.github.snapshot import TreeTruncated, git_blob_sha
from bot.render.build import Builder, BuildResult
from bot.render.charts import CHART_FILE, chart_folder
from bot.render.inputs import KUSTOMIZATION_NAMES, NeedTexts, TreeIndex, overlay_folder
from bot.render.reads import RenderInputs, render_inputs
from bot.render.targets import (
    ChartTarget,
    OverlayTarget,
    Target,
    chart_values,
    target_folder,
)
from bot.render.workloads import WorkloadChange, image_changes

if TYPE_CHECKING:
    from bot.runtime.context import Context

# Vendored subchart archives are read as bytes, up to this size each.
MAX_BINARY_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class EnvironmentRender:
    """What renders one environment and the services whose file is in it."""

    environment: str
    target: Target
    services: tuple[str, ...]

    @property
    def where(self) -> str:
        return target_folder(self.target) or "."

    @property
    def kind(self) -> str:
        """"build" (kustomize) or "render" (a chart), as the gate's conditions say it."""
        return "render" if isinstance(self.target, ChartTarget) else "build"


def environment_target(index: TreeIndex, path: str, service: str, environment: str
                       ) -> Target | None:
    """What renders the environment whose file is ``path``: its overlay, else its chart
    (release: the service; namespace: the environment), else None."""
    folder = overlay_folder(index, path)
    if folder is not None:
        return OverlayTarget(folder)
    chart = chart_folder(index, path)
    if chart is not None:
        return ChartTarget(chart, chart_values(chart, path), service, environment)
    return None


def policy_renders(policy: Policy, index: TreeIndex, *, gated_only: bool = False
                   ) -> list[EnvironmentRender]:
    """Every (environment, target) of ``index`` whose policy file is rendered, in policy
    order; services sharing one values file share one render (named after the first)."""
    found: dict[tuple[str, object], tuple[Target, list[str]]] = {}
    for env in policy.environments.values():
        if gated_only and not env.gated:
            continue
        for service in policy.services:
            target = environment_target(index, policy.path_for(service, env.name), service,
                                        env.name)
            if target is None:
                continue
            key: object = target if not isinstance(target, ChartTarget) else (
                target.chart, target.value_files)
            if (env.name, key) in found:
                found[(env.name, key)][1].append(service)
            else:
                found[(env.name, key)] = (target, [service])
    return [EnvironmentRender(env, target, tuple(services))
            for (env, _), (target, services) in found.items()]


def render_anchor(policy: Policy, index: TreeIndex, render: EnvironmentRender) -> str:
    """Where a finding about a render is written: the overlay's kustomization, or the values
    file of the render's first service (the chart's ``Chart.yaml`` for its defaults)."""
    target = render.target
    if isinstance(target, OverlayTarget):
        return index.kustomization_in(target.folder) or target.folder
    if isinstance(target, ChartTarget) and target.value_files:
        return target.value_files[-1]
    path = policy.path_for(render.services[0], render.environment)
    return path if path in index.sizes else target_folder(target)


class Files(Protocol):
    """Where a render's files come from: GitHub at a commit, or a folder on disk."""

    async def texts(self, paths: list[str]) -> dict[str, str | None]: ...

    async def binary(self, path: str) -> bytes | None: ...

    def blob(self, path: str) -> str: ...


async def walk_inputs(index: TreeIndex, target: Target, files: Files,
                      replaced: Mapping[str, str] | None = None) -> RenderInputs:
    """What rendering ``target`` reads (``replaced``: texts that stand for the files' own)."""
    texts: dict[str, str | None] = dict(replaced or {})
    while isinstance(found := render_inputs(index, target, texts), NeedTexts):
        texts.update(await files.texts(list(found.paths)))
    return found


async def run_render(builder: Builder, inputs: RenderInputs, files: Files,
                     replaced: Mapping[str, str] | None = None) -> BuildResult:
    """The render of ``inputs`` over their files, or why it cannot be run."""
    if inputs.problems:
        return BuildResult(None, "; ".join(inputs.problems))
    replaced = replaced or {}
    read = await files.texts([p for p in inputs.files if p not in replaced])
    contents: dict[str, str | bytes] = {}
    for path in inputs.files:
        text = replaced[path] if path in replaced else read[path]
        if text is None and path.endswith(".tgz") and isinstance(inputs.target, ChartTarget):
            binary = await files.binary(path)
            if binary is not None:
                contents[path] = binary
                continue
        if text is None:
            return BuildResult(None, f"`{path}` is not UTF-8 text or is larger than GitHub "
                                     "returns: the render cannot be run")
        contents[path] = text
    shas = {path: git_blob_sha(replaced[path].encode()) if path in replaced
            else files.blob(path) for path in inputs.files}
    return await builder.build(render_key(inputs, shas), inputs.job, contents)


def render_key(inputs: RenderInputs, shas: Mapping[str, str]) -> str:
    """What a render's result is kept by: the job and the blob of every file it reads."""
    digest = hashlib.sha256(repr(inputs.job).encode())
    for path in sorted(shas):
        digest.update(f"\0{path}\0{shas[path]}".encode())
    return digest.hexdigest()


# A render needs every file it reads at once: from three unknown blobs on, the commit's
# archive (one request) instead of a request each.
BUILD_ARCHIVE_FROM = 3


class CommitFiles:
    """The files of one commit of a repository on GitHub, for renders."""

    def __init__(self, ctx: Context, gh: GitHubAPI, repo: str, commit: str,
                 tree: dict[str, tuple[str, int]]) -> None:
        self.ctx, self.gh, self.repo, self.commit, self.tree = ctx, gh, repo, commit, tree

    async def texts(self, paths: list[str]) -> dict[str, str | None]:
        return await self.ctx.files.texts_at(self.gh, self.repo, self.commit, paths,
                                             archive_from=BUILD_ARCHIVE_FROM)

    async def binary(self, path: str) -> bytes | None:
        sha, size = self.tree[path]
        if size > MAX_BINARY_BYTES:
            return None
        return await self.ctx.files.blob_bytes(self.gh, self.repo, sha)

    def blob(self, path: str) -> str:
        return self.tree[path][0]


class RepoBuilds:
    """Renders of one repository's environments at its commits, for one job."""

    def __init__(self, ctx: Context, gh: GitHubAPI, repo: str) -> None:
        self.ctx = ctx
        self.gh = gh
        self.repo = repo
        self._indexes: dict[str, TreeIndex] = {}

    @property
    def rendering(self) -> bool:
        """Whether anything renders (a kustomize or a Helm)."""
        return self.ctx.builder is not None

    def renders(self, target: Target) -> bool:
        """Whether ``target`` can be rendered here (its tool is configured)."""
        builder = self.ctx.builder
        if builder is None:
            return False
        if isinstance(target, OverlayTarget):
            return builder.tool is not None
        if isinstance(target, ChartTarget):
            return builder.helm is not None
        return True

    async def index(self, commit: str) -> TreeIndex:
        """The files of ``commit``; TreeTruncated when GitHub does not list them all."""
        if commit not in self._indexes:
            tree = await self.ctx.files.tree(self.gh, self.repo, commit)
            self._indexes[commit] = TreeIndex({path: size for path, (_, size) in tree.items()})
        return self._indexes[commit]

    async def environments(self, commit: str, policy: Policy, *, gated_only: bool
                           ) -> list[EnvironmentRender]:
        """Every (environment, target) whose policy file is rendered at ``commit``."""
        return policy_renders(policy, await self.index(commit), gated_only=gated_only)

    async def prefetch(self, commit: str, paths: Iterable[str]) -> None:
        """Read many files of ``commit`` at once (one archive when many are new), so that
        the renders after it find their texts kept."""
        await self.ctx.files.texts_at(self.gh, self.repo, commit, paths,
                                      archive_from=BUILD_ARCHIVE_FROM)

    async def file(self, commit: str, path: str) -> RepoFile | None:
        """One file at ``commit`` read through the tree, the render's way: a cold read takes
        the commit's archive (one request) for every file a render may need next. None when
        the commit has no such file or it is not UTF-8; FileTooLarge past 1 MB."""
        tree = await self.ctx.files.tree(self.gh, self.repo, commit)
        if path not in tree:
            return None
        sha, size = tree[path]
        if size > MAX_FILE_BYTES:
            raise FileTooLarge(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        await self.ctx.files.from_archive(self.gh, self.repo, commit, tree,
                                          archive_from=BUILD_ARCHIVE_FROM)
        text = (await self.ctx.files.texts_at(self.gh, self.repo, commit, [path]))[path]
        return RepoFile(path, text, sha) if text is not None else None

    async def prefetch_walks(self, commit: str) -> None:
        """Every kustomization and ``Chart.yaml`` of ``commit``: what walking many renders
        reads."""
        index = await self.index(commit)
        await self.prefetch(commit, [path for path in index.sizes if posixpath.basename(path)
                                     in (*KUSTOMIZATION_NAMES, CHART_FILE)])

    async def _files(self, commit: str) -> CommitFiles:
        return CommitFiles(self.ctx, self.gh, self.repo, commit,
                           await self.ctx.files.tree(self.gh, self.repo, commit))

    async def inputs(self, commit: str, target: Target,
                     replaced: Mapping[str, str] | None = None) -> RenderInputs:
        """What rendering ``target`` at ``commit`` reads (``replaced``: texts that stand for
        the commit's own, as a promotion's edit would set them)."""
        key = (self.repo.lower(), commit, target)
        if not replaced and key in self.ctx.build_inputs:
            return self.ctx.build_inputs[key]
        found = await walk_inputs(await self.index(commit), target, await self._files(commit),
                                  replaced)
        if not replaced:  # a commit's files never change: neither does what a render reads
            self.ctx.build_inputs[key] = found
        return found

    async def build(self, commit: str, target: Target,
                    replaced: Mapping[str, str] | None = None) -> BuildResult:
        """The workloads' images of ``target`` rendered at ``commit``, or why there are
        none. Rendering must be on (``rendering``)."""
        builder = self.ctx.builder
        if builder is None:
            raise RuntimeError("rendering is off")
        try:
            inputs = await self.inputs(commit, target, replaced)
        except TreeTruncated as exc:
            return BuildResult(None, str(exc))
        return await run_render(builder, inputs, await self._files(commit), replaced)


@dataclass(frozen=True)
class OtherEffect:
    """What a promotion's edit changes in another environment's render (a file both read)."""

    environment: str
    where: str
    changes: tuple[WorkloadChange, ...] = ()
    problem: str | None = None


@dataclass(frozen=True)
class PromotionEffect:
    """What one promotion's edit changes in the workloads of its environment's render.

    ``target`` is None when the file is not rendered or its tool is off; ``problem`` says why
    the render could not be compared (the gate judges it then); ``others`` are the other
    environments whose render reads the edited file and changes with it."""

    target: Target | None = None
    changes: tuple[WorkloadChange, ...] = ()
    problem: str | None = None
    others: tuple[OtherEffect, ...] = ()

    @property
    def where(self) -> str:
        if self.target is None:
            return ""
        return target_folder(self.target) or "."

    @property
    def changes_nothing(self) -> bool:
        return self.target is not None and self.problem is None and not self.changes

    def refusal(self, image: str) -> str:
        if isinstance(self.target, ChartTarget):
            return (f"the render of the chart `{self.where}` runs the same images with this "
                    f"change: no workload's image changes (do the chart's templates use the "
                    f"values that name {image}?)")
        return (f"the build of `{self.where}` runs the same images with this change: no "
                f"workload's image changes (does an `images:` entry name {image} while the "
                "workloads run another name?)")


async def promotion_effect(builds: RepoBuilds, commit: str, policy: Policy, environment: str,
                           service: str, edited: Mapping[str, str]) -> PromotionEffect:
    """The workload images that ``edited`` (path → new text, files of one environment's
    render) changes in that render at ``commit``, and in every other environment's render
    that reads one of the edited files."""
    if not builds.rendering or not edited:
        return PromotionEffect()
    try:
        index = await builds.index(commit)
    except TreeTruncated as exc:
        return PromotionEffect(None, problem=str(exc))
    path = next(iter(edited))
    target = environment_target(index, path, service, environment)
    if target is None or not builds.renders(target):
        return PromotionEffect()
    own = await _compare(builds, commit, target, edited)
    others = await _other_effects(builds, commit, policy, environment, target, edited)
    if isinstance(own, str):
        return PromotionEffect(target, problem=own, others=others)
    return PromotionEffect(target, own, others=others)


async def _compare(builds: RepoBuilds, commit: str, target: Target, edited: Mapping[str, str]
                   ) -> tuple[WorkloadChange, ...] | str:
    after = await builds.build(commit, target, edited)
    if after.images is None:
        return after.error or "the render failed"
    before = await builds.build(commit, target)
    return tuple(image_changes(dict(before.images or {}), dict(after.images)))


async def _other_effects(builds: RepoBuilds, commit: str, policy: Policy, environment: str,
                         own: Target, edited: Mapping[str, str]) -> tuple[OtherEffect, ...]:
    found = []
    try:
        renders = await builds.environments(commit, policy, gated_only=False)
    except TreeTruncated:
        return ()
    for render in renders:
        if render.environment == environment or render.target == own \
                or not builds.renders(render.target):
            continue
        inputs = await builds.inputs(commit, render.target)
        if not any(inputs.reads(path) for path in edited):
            continue
        compared = await _compare(builds, commit, render.target, edited)
        if isinstance(compared, str):
            found.append(OtherEffect(render.environment, render.where, problem=compared))
        elif compared:
            found.append(OtherEffect(render.environment, render.where, compared))
    return tuple(found)
