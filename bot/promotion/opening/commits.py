"""Commits Conveyor builds on an exact parent: one tree (the new texts inline, GitHub writes
their blobs) and one commit whose only parent is the one named, whatever a branch holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gidgethub.abc import GitHubAPI

FILE_MODE = "100644"


async def commit_on(gh: GitHubAPI, full_name: str, parent_sha: str, texts: Mapping[str, str],
                    message: str) -> dict[str, Any]:
    """The commit (as `POST /git/commits` answers it) of ``texts`` on ``parent_sha``."""
    parent = await gh.getitem(f"/repos/{full_name}/git/commits/{parent_sha}")
    tree = await gh.post(f"/repos/{full_name}/git/trees", data={
        "base_tree": parent["tree"]["sha"],
        "tree": [{"path": path, "mode": FILE_MODE, "type": "blob", "content": text}
                 for path, text in texts.items()],
    })
    made: dict[str, Any] = await gh.post(f"/repos/{full_name}/git/commits", data={
        "message": message, "tree": tree["sha"], "parents": [parent_sha],
    })
    return made


def parent_shas(commit: Mapping[str, Any]) -> list[str]:
    return [str(parent.get("sha")) for parent in commit.get("parents") or []]
