"""The config check's part of rendering: the overlays a change reaches must still build."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.configcheck.report import Finding
from bot.domain.policy import Policy
from bot.github.snapshot import TreeTruncated
from bot.promotion.builds import RepoBuilds

if TYPE_CHECKING:
    from bot.runtime.context import Context


async def build_findings(ctx: Context, gh: GitHubAPI, repo: str, policy: Policy,
                         head_sha: str, changed: list[str]) -> list[Finding]:
    """A finding on the kustomization of every environment overlay that a changed file
    reaches and that does not build at ``head_sha`` (kustomize's own message)."""
    builds = RepoBuilds(ctx, gh, repo)
    if not builds.rendering or not changed:
        return []
    try:
        index = await builds.index(head_sha)
        overlays = await builds.overlays(head_sha, policy, gated_only=False)
    except TreeTruncated as exc:
        return [Finding(changed[0], 1, f"the environments' builds cannot be checked: {exc}")]
    if len(overlays) > 1:
        await builds.prefetch_kustomizations(head_sha)
    reached: dict[str, str] = {}  # overlay → the environment named in its finding
    files: set[str] = set()
    for overlay in overlays:
        if overlay.overlay in reached:
            continue
        inputs = await builds.inputs(head_sha, overlay.overlay)
        if any(inputs.reads(path) for path in changed):
            reached[overlay.overlay] = overlay.environment
            files |= set(inputs.files)
    if len(reached) > 1:
        await builds.prefetch(head_sha, files)
    findings: list[Finding] = []
    for folder, environment in reached.items():
        kustomization = index.kustomization_in(folder) or folder
        result = await builds.build(head_sha, folder)
        if result.images is None:
            findings.append(Finding(kustomization, 1, f"the {environment} build of "
                                                      f"{folder or '.'} fails: "
                                                      f"{result.error}"))
    return findings
