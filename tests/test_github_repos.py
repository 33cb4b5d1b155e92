"""The shared GitHub helpers (bot/github/repos.py) against the emulator over HTTP: what each
answers for paths, refs, labels, people and teams GitHub does not know, and why a file that
cannot be read as text is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from gidgethub.abc import GitHubAPI

from bot.github.client import GitHubClients
from bot.github.repos import (
    FileTooLarge,
    UnreadableFile,
    commit_for_ref,
    get_file,
    is_team_member,
    permission_of,
    remove_label,
)
from bot.sandbox.demo import DEPLOY_REPO, seed
from conveyor_emulator import Emulator
from tests.harness import SECRET

LARGE = "x" * (1024 * 1024 + 1)


@dataclass
class GitHub:
    emulator: Emulator
    gh: GitHubAPI


@pytest.fixture
async def github() -> AsyncIterator[GitHub]:
    emulator = Emulator(webhook_secret=SECRET)
    await emulator.start()
    demo = seed(emulator)
    await emulator.push_files(DEPLOY_REPO, {
        "big.yaml": LARGE,
        "latin1.yaml": "name: café\n".encode("latin-1"),
        "utf16.yaml": "name: web\n".encode("utf-16"),
    })
    # the bot's own clients: their store of what commit shas address is the app's
    clients = GitHubClients(api_url=emulator.base_url, app_id=str(emulator.app_id),
                            private_key=emulator.app_private_key_pem)
    try:
        yield GitHub(emulator, await clients.installation(demo.installation_id))
    finally:
        await clients.close()
        await emulator.stop()


async def test_a_folder_is_no_file(github: GitHub) -> None:
    assert await get_file(github.gh, DEPLOY_REPO, "apps/web") is None
    with pytest.raises(UnreadableFile) as refused:
        await get_file(github.gh, DEPLOY_REPO, "apps/web", strict=True)
    assert str(refused.value) == "not a regular file (GitHub calls it a dir)"


async def test_a_file_over_github_contents_limit(github: GitHub) -> None:
    with pytest.raises(UnreadableFile) as refused:
        await get_file(github.gh, DEPLOY_REPO, "big.yaml", strict=True)
    assert str(refused.value) == "larger than the 1 MB GitHub returns through the contents API"
    # The policy and snapshot readers name the file instead of failing the whole reading.
    with pytest.raises(FileTooLarge) as large:
        await get_file(github.gh, DEPLOY_REPO, "big.yaml")
    assert str(large.value) == "big.yaml is larger than 1048576 bytes"


@pytest.mark.parametrize(("path", "reason"), [
    ("latin1.yaml", "not valid UTF-8 (byte 0xe9 at offset 9)"),
    ("utf16.yaml", "not UTF-8 (it starts with a UTF-16 byte order mark)"),
])
async def test_text_that_is_not_utf8(github: GitHub, path: str, reason: str) -> None:
    assert await get_file(github.gh, DEPLOY_REPO, path) is None
    with pytest.raises(UnreadableFile) as refused:
        await get_file(github.gh, DEPLOY_REPO, path, strict=True)
    assert str(refused.value) == reason


async def test_a_file_at_an_immutable_commit_is_asked_once(github: GitHub) -> None:
    head = github.emulator.world.repos[DEPLOY_REPO].branch_sha("main")
    assert head is not None
    before = github.emulator.requests.count()
    first = await get_file(github.gh, DEPLOY_REPO, "README.md", head)
    again = await get_file(github.gh, DEPLOY_REPO, "README.md", head)
    assert first is not None and again == first and first.text.startswith("# acme/deploy")
    assert await get_file(github.gh, DEPLOY_REPO, "missing.yaml", head) is None
    assert await get_file(github.gh, DEPLOY_REPO, "missing.yaml", head) is None
    assert github.emulator.requests.count() - before == 2


async def test_unknown_refs(github: GitHub) -> None:
    assert await commit_for_ref(github.gh, DEPLOY_REPO, "no-such-branch") is None
    assert await commit_for_ref(github.gh, DEPLOY_REPO, "f" * 40) is None
    head = await commit_for_ref(github.gh, DEPLOY_REPO, "main")
    assert head is not None and "files" not in head
    before = github.emulator.requests.count()
    assert await commit_for_ref(github.gh, DEPLOY_REPO, str(head["sha"])) == head
    assert github.emulator.requests.count() == before


async def test_removing_a_label_the_issue_does_not_carry(github: GitHub) -> None:
    issue = await github.emulator.open_issue(DEPLOY_REPO, "A question", author="alice")
    number = int(issue["number"])
    await github.emulator.add_labels(DEPLOY_REPO, number, ["conveyor:blocked"], user="alice")
    await remove_label(github.gh, DEPLOY_REPO, number, "conveyor:blocked")
    # GitHub answers 404 for a label the issue does not carry: that is already the wanted state
    await remove_label(github.gh, DEPLOY_REPO, number, "conveyor:blocked")
    assert github.emulator.requests.count("DELETE", status=404) == 1


async def test_people_and_teams_github_does_not_know(github: GitHub) -> None:
    assert await permission_of(github.gh, DEPLOY_REPO, "nobody-here") == "none"
    assert await permission_of(github.gh, DEPLOY_REPO, "bob") == "maintain"
    assert await is_team_member(github.gh, "acme", "sre", "alice") is False
    assert await is_team_member(github.gh, "acme", "sre", "bob") is True
    assert await is_team_member(github.gh, "acme", "no-team", "bob") is False
