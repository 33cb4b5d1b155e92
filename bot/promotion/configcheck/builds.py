"""The config check's part of rendering: the renders a change reaches must still run, and a
file one environment promotes into that another environment's render reads is said."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.configcheck.report import Finding
from bot.domain.policy import Policy
from bot.github.snapshot import TreeTruncated
from bot.promotion.builds import BUILT_AHEAD, EnvironmentRender, RepoBuilds, render_anchor
from bot.render.reads import RenderInputs

if TYPE_CHECKING:
    from bot.runtime.context import Context


async def build_findings(ctx: Context, gh: GitHubAPI, full_name: str, policy: Policy,
                         head_sha: str, changed: list[str], default_branch: str = "main"
                         ) -> tuple[list[Finding], list[Finding]]:
    """A finding for every environment render that a changed file reaches and that does not
    run at ``head_sha`` (kustomize's or Helm's own message), on its kustomization or values
    file; and a notice on every changed file of one environment that a gated environment's
    render reads too."""
    builds = RepoBuilds(ctx, gh, full_name, default_branch)
    if not builds.rendering or not changed:
        return [], []
    try:
        index = await builds.index(head_sha)
        renders = await builds.environments(head_sha, policy, gated_only=False)
    except TreeTruncated as exc:
        return [Finding(changed[0], 1, f"the environments' renders cannot be checked: "
                                       f"{exc}")], []
    if len(renders) > 1:
        await builds.prefetch_walks(head_sha)
    reached: list[EnvironmentRender] = []
    files: set[str] = set()
    read: dict[EnvironmentRender, RenderInputs] = {}
    for render in renders:
        if not builds.renders(render.target):
            continue
        inputs = read[render] = await builds.inputs(head_sha, render.target)
        if any(inputs.reads(path) for path in changed) and \
                all(render.target != other.target for other in reached):
            reached.append(render)
            files |= set(inputs.files)
    if len(reached) > 1:
        await builds.prefetch(head_sha, files)
    findings: list[Finding] = []
    for start in range(0, len(reached), BUILT_AHEAD):
        group = reached[start:start + BUILT_AHEAD]
        if len(group) > 1:  # at once, overlays in shared runs where exact
            await builds.build_all(head_sha, [render.target for render in group])
        for render in group:
            result = await builds.build(head_sha, render.target)
            if result.images is None:
                findings.append(Finding(render_anchor(policy, index, render), 1, (
                    f"the {render.environment} {render.kind} of {render.where} fails: "
                    f"{result.error}")))
    return findings, overlap_notices(policy, changed, read)


def overlap_notices(policy: Policy, paths: list[str],
                    read: dict[EnvironmentRender, RenderInputs]) -> list[Finding]:
    """A notice on each of ``paths`` that is one environment's file and that a gated
    environment's render reads besides."""
    notices = []
    for path in paths:
        owners = {env.name for _, env in policy.environment_for_path(path)}
        if not owners:
            continue
        for render, inputs in read.items():
            if render.environment in owners or not policy.environments[
                    render.environment].gated or not inputs.takes(path):
                continue
            notices.append(Finding(path, 1, (
                f"{' and '.join(sorted(owners))}'s file, read by the {render.environment} "
                f"{render.kind} of {render.where} too: a change here changes what "
                f"{render.environment} runs, and a promotion into it names "
                f"{render.environment}")))
    return notices
