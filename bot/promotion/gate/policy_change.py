"""A pull request that changes the policy file, read for the gate: the rules of gated
environments it changes between the policy at its base and at its head."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Policy, PolicyError, load_policy
from bot.domain.policy.changes import RuleChange, gated_rule_changes
from bot.github.repos import UnreadableFile, get_file
from bot.names import POLICY_PATH
from bot.promotion.gate.changes import ChangedFile
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.runtime.offload import run_cpu


@dataclass(frozen=True)
class PolicyChange:
    """What the PR's policy changes for gated environments, or why it cannot be judged."""

    changes: tuple[RuleChange, ...] = ()
    problem: str | None = None

    def by_environment(self) -> dict[str, tuple[str, ...]]:
        grouped: dict[str, list[str]] = {}
        for change in self.changes:
            grouped.setdefault(change.environment, []).append(change.text)
        return {environment: tuple(texts) for environment, texts in grouped.items()}


async def read_policy_change(gh: GitHubAPI, repo: DeploymentRepo, facts: PullFacts,
                             files: Sequence[ChangedFile]) -> PolicyChange | None:
    """None when the PR leaves the policy file alone. The environments judged are those gated
    on the default branch (``repo.policy``): an environment only the PR's base had changes
    nothing that is served."""
    touched = next((f for f in files if POLICY_PATH in (f.path, f.previous)), None)
    if touched is None:
        return None
    gated = [name for name, env in repo.policy.environments.items() if env.gated]
    if touched.status == "removed" or touched.path != POLICY_PATH:
        gone = "removed or renamed" if touched.status != "removed" else "removed"
        return PolicyChange(tuple(
            RuleChange(name, "the policy file", "present",
                       f"{gone}: Conveyor stops gating this repository")
            for name in gated))
    try:
        head_file = await get_file(gh, repo.full_name, POLICY_PATH, facts.head_sha, strict=True)
    except UnreadableFile as exc:
        return PolicyChange(problem=f"the policy at this pull request's head cannot be read: "
                                    f"{exc}")
    if head_file is None:
        return PolicyChange(problem="the policy is missing at this pull request's head")
    try:
        head = await _load(head_file.text)
    except PolicyError as exc:
        first = exc.issues[0] if exc.issues else exc
        more = f" (+{len(exc.issues) - 1} more)" if len(exc.issues) > 1 else ""
        return PolicyChange(problem=f"the policy at this pull request's head does not load: "
                                    f"{first}{more}")
    base = await _base_policy(gh, repo, facts.base_sha)
    return PolicyChange(gated_rule_changes(base, head, judged=gated))


async def _base_policy(gh: GitHubAPI, repo: DeploymentRepo, base_sha: str) -> Policy:
    """The policy at the PR's base; the default branch's when that one does not load (the
    PR changes the policy from what is served, then)."""
    try:
        found = await get_file(gh, repo.full_name, POLICY_PATH, base_sha, strict=True)
        if found is not None:
            return await _load(found.text)
    except (UnreadableFile, PolicyError):
        pass
    return repo.policy


async def _load(text: str) -> Policy:
    policy: Policy = await run_cpu(len(text), load_policy, text, POLICY_PATH)
    return policy
