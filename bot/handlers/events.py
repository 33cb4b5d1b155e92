"""What a webhook says about the repository it comes from: which deployment repository it is,
whether it is a push to that repository's default branch, and which paths a push touched."""

from __future__ import annotations

from gidgethub import sansio

from bot.github.client import ConveyorGitHubAPI
from bot.promotion.policies import DeploymentRepo, IndexedRepo, PolicyIndex


def default_branch(event: sansio.Event) -> str | None:
    """The default branch the payload names; None when it names none (internal jobs)."""
    repository = event.data["repository"]
    # Push payloads carry the same name under the older key `master_branch` as well.
    branch = repository.get("default_branch") or repository.get("master_branch")
    return str(branch) if branch else None


def is_default_branch_push(event: sansio.Event) -> bool:
    """A push that moved the default branch (a push that deleted a branch is not)."""
    branch = default_branch(event)
    return (branch is not None and event.data.get("ref") == f"refs/heads/{branch}"
            and not event.data.get("deleted"))


def pushed_paths(event: sansio.Event) -> set[str]:
    """The paths the commits of a push added, modified or removed."""
    return {path for commit in event.data.get("commits") or []
            for key in ("added", "modified", "removed") for path in commit.get(key) or []}


async def indexed_repo(event: sansio.Event, gh: ConveyorGitHubAPI, policies: PolicyIndex
                       ) -> IndexedRepo | None:
    """The deployment repository the event comes from, its policy usable or broken; None for
    any other repository."""
    return await policies.get(gh, event.data["installation"]["id"],
                                       event.data["repository"]["full_name"], default_branch(event))


async def deployment_repo(event: sansio.Event, gh: ConveyorGitHubAPI, policies: PolicyIndex
                          ) -> DeploymentRepo | None:
    """The deployment repository the event comes from when its policy is usable."""
    repo = await indexed_repo(event, gh, policies)
    return repo if isinstance(repo, DeploymentRepo) else None
