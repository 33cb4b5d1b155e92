"""The Kustomize builds of a deployment repository's environments, at commits of GitHub.

Trees are read by commit and file texts by blob sha through the app's shared `RepoFiles`
(a cold read of many files is one archive request); what a build reads is worked out by
`bot.render.inputs` and the build itself runs in `bot.render.build`, keyed by the overlay and
the blob sha of every file it reads, so the same inputs at another commit are not built again.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Policy
from bot.github.repos import MAX_FILE_BYTES, FileTooLarge, RepoFile
from bot.github.snapshot import TreeTruncated, git_blob_sha
from bot.render.build import BuildResult
from bot.render.inputs import (
    KUSTOMIZATION_NAMES,
    BuildInputs,
    NeedTexts,
    TreeIndex,
    build_inputs,
    overlay_folder,
)
from bot.render.workloads import WorkloadChange, image_changes

if TYPE_CHECKING:
    from bot.runtime.context import Context


@dataclass(frozen=True)
class EnvironmentOverlay:
    """One Kustomize overlay of an environment and the services whose file is in it."""

    environment: str
    overlay: str
    services: tuple[str, ...]


def policy_overlays(policy: Policy, index: TreeIndex, *, gated_only: bool = False
                    ) -> list[EnvironmentOverlay]:
    """Every (environment, overlay) of ``index`` whose policy file is part of a Kustomize
    overlay, in policy order."""
    found: dict[tuple[str, str], list[str]] = {}
    for env in policy.environments.values():
        if gated_only and not env.gated:
            continue
        for service in policy.services:
            folder = overlay_folder(index, policy.path_for(service, env.name))
            if folder is not None:
                found.setdefault((env.name, folder), []).append(service)
    return [EnvironmentOverlay(env, folder, tuple(services))
            for (env, folder), services in found.items()]


# A build needs every file it reads at once: from three unknown blobs on, the commit's
# archive (one request) instead of a request each.
BUILD_ARCHIVE_FROM = 3


class RepoBuilds:
    """Builds of one repository's overlays at its commits, for one job."""

    def __init__(self, ctx: Context, gh: GitHubAPI, repo: str) -> None:
        self.ctx = ctx
        self.gh = gh
        self.repo = repo
        self._indexes: dict[str, TreeIndex] = {}

    @property
    def rendering(self) -> bool:
        return self.ctx.builder is not None

    async def index(self, commit: str) -> TreeIndex:
        """The files of ``commit``; TreeTruncated when GitHub does not list them all."""
        if commit not in self._indexes:
            tree = await self.ctx.files.tree(self.gh, self.repo, commit)
            self._indexes[commit] = TreeIndex({path: size for path, (_, size) in tree.items()})
        return self._indexes[commit]

    async def overlays(self, commit: str, policy: Policy, *, gated_only: bool
                       ) -> list[EnvironmentOverlay]:
        """Every (environment, overlay) whose policy file is part of a Kustomize overlay."""
        return policy_overlays(policy, await self.index(commit), gated_only=gated_only)

    async def prefetch(self, commit: str, paths: Iterable[str]) -> None:
        """Read many files of ``commit`` at once (one archive when many are new), so that
        the builds after it find their texts kept."""
        await self.ctx.files.texts_at(self.gh, self.repo, commit, paths,
                                      archive_from=BUILD_ARCHIVE_FROM)

    async def file(self, commit: str, path: str) -> RepoFile | None:
        """One file at ``commit`` read through the tree, the build's way: a cold read takes
        the commit's archive (one request) for every file a build may need next. None when
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

    async def prefetch_kustomizations(self, commit: str) -> None:
        """Every kustomization file of ``commit``: what walking many overlays reads."""
        index = await self.index(commit)
        await self.prefetch(commit, [path for path in index.sizes
                                     if posixpath.basename(path) in KUSTOMIZATION_NAMES])

    async def inputs(self, commit: str, overlay: str,
                     replaced: Mapping[str, str] | None = None) -> BuildInputs:
        """What building ``overlay`` at ``commit`` reads (``replaced``: texts that stand for
        the commit's own, as a promotion's edit would set them)."""
        key = (self.repo.lower(), commit, overlay)
        if not replaced and key in self.ctx.build_inputs:
            return self.ctx.build_inputs[key]
        index = await self.index(commit)
        texts: dict[str, str | None] = dict(replaced or {})
        while isinstance(found := build_inputs(index, overlay, texts), NeedTexts):
            texts.update(await self.ctx.files.texts_at(self.gh, self.repo, commit, found.paths))
        if not replaced:  # a commit's files never change: neither does what a build reads
            self.ctx.build_inputs[key] = found
        return found

    async def build(self, commit: str, overlay: str,
                    replaced: Mapping[str, str] | None = None) -> BuildResult:
        """The workloads' images of ``overlay`` built at ``commit``, or why there are none.
        Rendering must be on (``rendering``)."""
        builder = self.ctx.builder
        if builder is None:
            raise RuntimeError("no kustomize: rendering is off")
        try:
            inputs = await self.inputs(commit, overlay, replaced)
        except TreeTruncated as exc:
            return BuildResult(None, str(exc))
        if inputs.problems:
            return BuildResult(None, "; ".join(inputs.problems))
        replaced = replaced or {}
        tree = await self.ctx.files.tree(self.gh, self.repo, commit)
        files: dict[str, str] = {}
        read = await self.ctx.files.texts_at(self.gh, self.repo, commit,
                                             [p for p in inputs.files if p not in replaced],
                                             archive_from=BUILD_ARCHIVE_FROM)
        for path in inputs.files:
            text = replaced[path] if path in replaced else read[path]
            if text is None:
                return BuildResult(None, f"`{path}` is not UTF-8 text or is larger than GitHub "
                                         "returns: the build cannot be run")
            files[path] = text
        shas = {path: git_blob_sha(replaced[path].encode()) if path in replaced
                else tree[path][0] for path in inputs.files}
        return await builder.build(build_key(overlay, shas), overlay, files)


@dataclass(frozen=True)
class PromotionEffect:
    """What one promotion's edit changes in the workloads of its environment's build.

    ``overlay`` is None when the file is not part of a Kustomize overlay or rendering is off;
    ``problem`` says why the build could not be compared (the gate judges it then)."""

    overlay: str | None = None
    changes: tuple[WorkloadChange, ...] = ()
    problem: str | None = None

    @property
    def changes_nothing(self) -> bool:
        return self.overlay is not None and self.problem is None and not self.changes

    def refusal(self, image: str) -> str:
        return (f"the build of `{self.overlay}` runs the same images with this change: no "
                f"workload's image changes (does an `images:` entry name {image} while the "
                "workloads run another name?)")


async def promotion_effect(builds: RepoBuilds, commit: str, edited: Mapping[str, str]
                           ) -> PromotionEffect:
    """The workload images that ``edited`` (path → new text, files of one overlay) changes
    in the build of their overlay at ``commit``."""
    if not builds.rendering or not edited:
        return PromotionEffect()
    try:
        index = await builds.index(commit)
    except TreeTruncated as exc:
        return PromotionEffect(None, problem=str(exc))
    overlay = overlay_folder(index, next(iter(edited)))
    if overlay is None:
        return PromotionEffect()
    after = await builds.build(commit, overlay, edited)
    if after.images is None:
        return PromotionEffect(overlay, problem=after.error)
    before = await builds.build(commit, overlay)
    return PromotionEffect(overlay, tuple(image_changes(dict(before.images or {}),
                                                        dict(after.images))))


def build_key(overlay: str, shas: Mapping[str, str]) -> str:
    """What a build's result is kept by: its overlay and the blob of every file it reads."""
    digest = hashlib.sha256(overlay.encode())
    for path in sorted(shas):
        digest.update(f"\0{path}\0{shas[path]}".encode())
    return digest.hexdigest()

