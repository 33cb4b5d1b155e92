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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Policy
from bot.github.repos import MAX_FILE_BYTES, FileTooLarge, RepoFile
from bot.github.snapshot import TreeListing, TreeTruncated, git_blob_sha
from bot.promotion.merged_tree import MergedTree, merge_trees
from bot.render.build import Builder, BuildResult, Request
from bot.render.charts import CHART_FILE, chart_folder
from bot.render.inputs import KUSTOMIZATION_NAMES, NeedTexts, TreeIndex, overlay_folder
from bot.render.pointers import Here, Place, follow_target, points_at
from bot.render.reads import RenderInputs, render_inputs
from bot.render.syncs import SyncObject, git_repository, sync_objects
from bot.render.targets import (
    ChartTarget,
    OverlayTarget,
    Target,
    chart_values,
    target_folder,
)

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


# A repository scanned for its Argo CD and Flux objects: at most this many YAML files.
MAX_SCANNED_FILES = 5000


def may_point_at_charts(policy: Policy, index: TreeIndex, renders: list[EnvironmentRender],
                        *, gated_only: bool) -> bool:
    """Whether an Application or HelmRelease could say how an environment's chart renders:
    some environment renders a chart, or has a values file no overlay or chart holds."""
    if any(isinstance(render.target, ChartTarget) for render in renders):
        return True
    rendered = {(r.environment, s) for r in renders for s in r.services}
    return any((env.name, service) not in rendered
               and policy.path_for(service, env.name).endswith((".yaml", ".yml"))
               for env in policy.environments.values() if env.gated or not gated_only
               for service in policy.services)


def chart_pointers(policy: Policy, index: TreeIndex, renders: list[EnvironmentRender],
                   objects: list[SyncObject], here: Here, *, gated_only: bool
                   ) -> list[EnvironmentRender]:
    """The renders with each chart environment rendered as the Application or HelmRelease of
    the repository that renders its chart with its file says (the first one, by file); an
    environment whose values file lies outside any chart is rendered with the chart such an
    object names it a value file of."""
    charts: list[ChartTarget] = []
    repositories = {o.identity: o for o in objects if o.kind == "GitRepository"}
    for obj in sorted(objects, key=lambda o: (o.file, o.name)):
        for _, follow in obj.follows:
            url, revision = follow.url, follow.revision
            if obj.source_ref is not None:
                source = repositories.get(("GitRepository", obj.source_ref[2],
                                           obj.source_ref[1]))
                if source is None:
                    continue
                url, revision = git_repository(source)
            target = follow_target(follow, url, revision, here, index)
            if isinstance(target, ChartTarget):
                charts.append(target)
    if not charts:
        return renders
    claimed = frozenset(policy.path_for(s, e) for s in policy.services
                        for e in policy.environments)
    found: list[EnvironmentRender] = []
    for render in renders:
        files = tuple(policy.path_for(service, render.environment)
                      for service in render.services)
        place = Place(render.environment, render.services, files, render.target)
        chosen = next((chart for chart in charts if isinstance(render.target, ChartTarget)
                       and points_at(chart, place, claimed)), None)
        found.append(replace(render, target=chosen) if chosen is not None else render)
    rendered = {(r.environment, s) for r in renders for s in r.services}
    for env in policy.environments.values():
        if gated_only and not env.gated:
            continue
        for service in policy.services:
            path = policy.path_for(service, env.name)
            if (env.name, service) in rendered:
                continue
            chosen = next((chart for chart in charts if path in chart.value_files), None)
            if chosen is not None:
                found.append(EnvironmentRender(env.name, chosen, (service,)))
    return found


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
    request = await render_request(inputs, files, replaced)
    if isinstance(request, BuildResult):
        return request
    return await builder.build(*request)


async def render_request(inputs: RenderInputs, files: Files,
                         replaced: Mapping[str, str] | None = None) -> Request | BuildResult:
    """What the builder is asked for ``inputs`` (key, job, file contents), or why the render
    cannot be run."""
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
    return render_key(inputs, shas), inputs.job, contents


def builder_renders(builder: Builder | None, target: Target) -> bool:
    """Whether ``builder`` renders ``target`` (the tool it needs is configured)."""
    if builder is None:
        return False
    if isinstance(target, OverlayTarget):
        return builder.tool is not None
    if isinstance(target, ChartTarget):
        return builder.helm is not None
    return True


def render_key(inputs: RenderInputs, shas: Mapping[str, str]) -> str:
    """What a render's result is kept by: the job and the blob of every file it reads."""
    digest = hashlib.sha256(repr(inputs.job).encode())
    for path in sorted(shas):
        digest.update(f"\0{path}\0{shas[path]}".encode())
    return digest.hexdigest()


# Renders built ahead (`RepoBuilds.build_all`) at a commit before they are read: well within
# the builder's cache.
BUILT_AHEAD = 250

# A render needs every file it reads at once: from three unknown blobs on, the commit's
# archive (one request) instead of a request each.
BUILD_ARCHIVE_FROM = 3


class CommitFiles:
    """The files of one commit of a repository on GitHub (or of a merge of two), for
    renders."""

    def __init__(self, builds: RepoBuilds, commit: str, tree: dict[str, tuple[str, int]]
                 ) -> None:
        self.builds, self.commit, self.tree = builds, commit, tree

    async def texts(self, paths: list[str]) -> dict[str, str | None]:
        return await self.builds.texts(self.commit, paths)

    async def binary(self, path: str) -> bytes | None:
        sha, size = self.tree[path]
        if size > MAX_BINARY_BYTES:
            return None
        return await self.builds.ctx.files.blob_bytes(self.builds.gh, self.builds.full_name,
                                                      sha)

    def blob(self, path: str) -> str:
        return self.tree[path][0]


@dataclass(frozen=True)
class Merge:
    """A tree no commit has: ``head`` merged into ``base`` (`bot.promotion.merged_tree`)."""

    base: str
    head: str
    tree: MergedTree

    @property
    def key(self) -> str:
        """What stands for a commit where the merge is rendered."""
        return f"{self.base}+{self.head}"


class RepoBuilds:
    """Renders of one repository's environments at its commits, for one job; its default
    branch is what the Argo CD and Flux objects of the repository must follow to count.
    Besides commits, a merge of two commits is rendered by its key once `merged` made it."""

    def __init__(self, ctx: Context, gh: GitHubAPI, full_name: str, default_branch: str = "main"
                 ) -> None:
        self.ctx = ctx
        self.gh = gh
        self.full_name = full_name
        self.here = Here(full_name, default_branch)
        self._indexes: dict[str, TreeIndex] = {}
        self._merges: dict[str, Merge] = {}

    async def merged(self, base: str, head: str, ancestor: str) -> Merge:
        """``head`` merged into ``base`` (their merge base: ``ancestor``), renderable by its
        key; TreeTruncated when GitHub does not list one of the three trees."""
        trees = [await self.ctx.files.listing(self.gh, self.full_name, commit)
                 for commit in (base, head, ancestor)]
        merge = Merge(base, head, merge_trees(*trees))
        self._merges[merge.key] = merge
        return merge

    async def listing(self, commit: str) -> TreeListing:
        """The tree of ``commit`` (or of a merge's key)."""
        merge = self._merges.get(commit)
        if merge is not None:
            return merge.tree.listing
        return await self.ctx.files.listing(self.gh, self.full_name, commit)

    async def texts(self, commit: str, paths: Iterable[str]) -> dict[str, str | None]:
        """The texts of ``paths`` at ``commit`` (or a merge's key: each read at the commit
        whose version the merge took); many unknown blobs come in one archive."""
        merge = self._merges.get(commit)
        if merge is None:
            return await self.ctx.files.texts_at(self.gh, self.full_name, commit, paths,
                                                 archive_from=BUILD_ARCHIVE_FROM)
        wanted = list(dict.fromkeys(paths))
        found: dict[str, str | None] = {}
        for side, taken in ((merge.head, True), (merge.base, False)):
            part = [path for path in wanted if (path in merge.tree.from_head) is taken]
            if part:
                found.update(await self.ctx.files.texts_at(
                    self.gh, self.full_name, side, part, archive_from=BUILD_ARCHIVE_FROM))
        return found

    @property
    def rendering(self) -> bool:
        """Whether anything renders (a kustomize or a Helm)."""
        return self.ctx.builder is not None

    def renders(self, target: Target) -> bool:
        """Whether ``target`` can be rendered here (its tool is configured)."""
        return builder_renders(self.ctx.builder, target)

    async def blobs(self, commit: str) -> dict[str, str]:
        """path → blob sha of every file of ``commit`` (the tree `index` reads, kept)."""
        listing = await self.listing(commit)
        return {path: sha for path, (sha, _) in listing.blobs.items()}

    async def index(self, commit: str) -> TreeIndex:
        """The files of ``commit``; TreeTruncated when GitHub does not list them all."""
        if commit not in self._indexes:
            listing = await self.listing(commit)
            self._indexes[commit] = TreeIndex(
                {path: size for path, (_, size) in listing.blobs.items()}, listing.modes)
        return self._indexes[commit]

    async def environments(self, commit: str, policy: Policy, *, gated_only: bool
                           ) -> list[EnvironmentRender]:
        """Every (environment, target) whose policy file is rendered at ``commit``; a chart
        environment as the Argo CD Application or Flux HelmRelease of the repository that
        renders it says (its value files in order, inline values, release and namespace)."""
        index = await self.index(commit)
        renders = policy_renders(policy, index, gated_only=gated_only)
        if not may_point_at_charts(policy, index, renders, gated_only=gated_only):
            return renders
        return chart_pointers(policy, index, renders, await self.syncs(commit), self.here,
                              gated_only=gated_only)

    async def render_target(self, commit: str, policy: Policy, environment: str,
                            service: str) -> Target | None:
        """What renders ``service``'s file in ``environment`` at ``commit``."""
        for render in await self.environments(commit, policy, gated_only=False):
            if render.environment == environment and service in render.services:
                return render.target
        return None

    async def syncs(self, commit: str) -> list[SyncObject]:
        """The Argo CD and Flux objects of every YAML file of ``commit`` (kept by commit,
        each file's by its blob)."""
        key = (self.full_name.lower(), commit)
        if key in self.ctx.sync_scans:
            return self.ctx.sync_scans[key]
        tree = (await self.listing(commit)).blobs
        paths = [path for path, (_, size) in sorted(tree.items())
                 if path.endswith((".yaml", ".yml")) and size <= MAX_FILE_BYTES]
        found: list[SyncObject] = []
        if len(paths) <= MAX_SCANNED_FILES:
            unknown = [path for path in paths if (tree[path][0], path) not in
                       self.ctx.sync_blobs]
            texts = await self.texts(commit, unknown)
            for path in paths:
                blob = (tree[path][0], path)
                if blob not in self.ctx.sync_blobs:
                    text = texts.get(path)
                    self.ctx.sync_blobs[blob] = tuple(sync_objects(path, text)) \
                        if text is not None else ()
                found += self.ctx.sync_blobs[blob]
        self.ctx.sync_scans[key] = found
        return found

    async def prefetch(self, commit: str, paths: Iterable[str]) -> None:
        """Read many files of ``commit`` at once (one archive when many are new), so that
        the renders after it find their texts kept."""
        await self.texts(commit, paths)

    async def file(self, commit: str, path: str) -> RepoFile | None:
        """One file at ``commit`` read through the tree, the render's way: a cold read takes
        the commit's archive (one request) for every file a render may need next. None when
        the commit has no such file or it is not UTF-8; FileTooLarge past 1 MB."""
        tree = await self.ctx.files.tree(self.gh, self.full_name, commit)
        if path not in tree:
            return None
        sha, size = tree[path]
        if size > MAX_FILE_BYTES:
            raise FileTooLarge(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        await self.ctx.files.from_archive(self.gh, self.full_name, commit, tree,
                                          archive_from=BUILD_ARCHIVE_FROM)
        text = (await self.ctx.files.texts_at(self.gh, self.full_name, commit, [path]))[path]
        return RepoFile(path, text, sha) if text is not None else None

    async def prefetch_walks(self, commit: str) -> None:
        """Every kustomization and ``Chart.yaml`` of ``commit``: what walking many renders
        reads."""
        index = await self.index(commit)
        await self.prefetch(commit, [path for path in index.sizes if posixpath.basename(path)
                                     in (*KUSTOMIZATION_NAMES, CHART_FILE)])

    async def _files(self, commit: str) -> CommitFiles:
        return CommitFiles(self, commit, (await self.listing(commit)).blobs)

    async def inputs(self, commit: str, target: Target,
                     replaced: Mapping[str, str] | None = None) -> RenderInputs:
        """What rendering ``target`` at ``commit`` reads (``replaced``: texts that stand for
        the commit's own, as a promotion's edit would set them)."""
        key = (self.full_name.lower(), commit, target)
        if not replaced and key in self.ctx.build_inputs:
            return self.ctx.build_inputs[key]
        found = await walk_inputs(await self.index(commit), target, await self._files(commit),
                                  replaced)
        if not replaced:  # a commit's files never change: neither does what a render reads
            self.ctx.build_inputs[key] = found
        return found

    async def build_all(self, commit: str, targets: Iterable[Target]) -> None:
        """Render every one of ``targets`` at ``commit`` ahead of ``build``, which then
        answers from the builder's cache: overlays that may share a kustomize run share it,
        at most the builder's concurrency at once. Rendering must be on; TreeTruncated when
        GitHub does not list the commit's files."""
        builder = self.ctx.builder
        if builder is None:
            raise RuntimeError("rendering is off")
        files = await self._files(commit)
        requests: list[Request] = []
        for target in targets:
            request = await render_request(await self.inputs(commit, target), files)
            if not isinstance(request, BuildResult):
                requests.append(request)
        await builder.build_many(requests)

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
