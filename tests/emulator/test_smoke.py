from __future__ import annotations

from gidgethub.aiohttp import GitHubAPI

from conveyor_emulator import Emulator

from .conftest import Receiver


async def test_repo_and_contents(emulator: Emulator, gh: GitHubAPI, receiver: Receiver) -> None:
    repo = await gh.getitem("/repos/acme/deploy")
    assert repo["full_name"] == "acme/deploy"
    content = await gh.getitem("/repos/acme/deploy/contents/README.md")
    assert content["path"] == "README.md"
    assert emulator.violations == []
