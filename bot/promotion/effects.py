"""What a promotion's edit changes in the renders of its environment, and of every other
environment whose render reads the edited file (pure decisions on `bot.promotion.builds`'
renders): the workload rows of a promotion's body, and its refusal when it changes no
workload's image."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from bot.domain.policy import Policy
from bot.domain.promotions.refusals import no_change_refusal
from bot.github.snapshot import TreeTruncated
from bot.promotion.builds import RepoBuilds, environment_target
from bot.render.build import BuildResult
from bot.render.targets import ChartTarget, Target, target_folder
from bot.render.workloads import WorkloadChange, image_changes


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
        return no_change_refusal(self.where, image, chart=isinstance(self.target, ChartTarget))


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
    target = await builds.render_target(commit, policy, environment, service) or \
        environment_target(index, path, service, environment)
    if target is None or not builds.renders(target):
        return PromotionEffect()
    own = await _compare(builds, commit, target, edited)
    others = await _other_effects(builds, commit, policy, environment, target, edited)
    if isinstance(own, str):
        return PromotionEffect(target, problem=own, others=others)
    return PromotionEffect(target, own, others=others)


async def _compare(builds: RepoBuilds, commit: str, target: Target, edited: Mapping[str, str]
                   ) -> tuple[WorkloadChange, ...] | str:
    # what both renders read is read first (they share most of it); then the two run at once
    with_edit = await builds.inputs(commit, target, edited)
    without = await builds.inputs(commit, target)
    await builds.prefetch(commit, sorted({*with_edit.files, *without.files} - set(edited)))
    after, before = await asyncio.gather(builds.build(commit, target, edited),
                                         builds.build(commit, target))
    return render_changes(before, after)


def render_changes(before: BuildResult, after: BuildResult
                   ) -> tuple[WorkloadChange, ...] | str:
    """The workloads whose image differs between two renders, or why the edited one failed."""
    if after.images is None:
        return after.error or "the render failed"
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
