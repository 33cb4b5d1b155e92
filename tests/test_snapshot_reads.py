"""Snapshots of a deployment repository's files (bot/github/snapshot.py) against the emulator
over HTTP: an empty repository, files too large or not UTF-8, and archives that cannot stand for
the blobs."""

from __future__ import annotations

import io
import tarfile
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
from gidgethub.aiohttp import GitHubAPI

from bot.github.snapshot import RepoFiles, blobs_in_archive, git_blob_sha
from bot.sandbox.demo import DEPLOY_REPO, seed
from conveyor_emulator import Emulator
from tests.harness import SECRET

STAGING = "apps/web/overlays/staging/kustomization.yaml"


@dataclass
class GitHub:
    emulator: Emulator
    gh: GitHubAPI  # the demo installation's
    empty_gh: GitHubAPI  # an installation on an empty repository


@pytest.fixture
async def github() -> AsyncIterator[GitHub]:
    emulator = Emulator(webhook_secret=SECRET)
    await emulator.start()
    demo = seed(emulator)
    emulator.add_repo("acme/empty")
    empty = emulator.install("acme", ["acme/empty"])
    async with aiohttp.ClientSession() as session:
        def client(installation: int) -> GitHubAPI:
            return GitHubAPI(session, "conveyor-tests", base_url=emulator.base_url,
                             oauth_token=emulator.installation_token(installation))
        yield GitHub(emulator, client(demo.installation_id), client(empty))
    await emulator.stop()


async def test_an_empty_repository_has_no_files(github: GitHub) -> None:
    snapshot = await RepoFiles().read(github.empty_gh, "acme/empty", "main", [STAGING])
    assert snapshot.commit is None
    assert snapshot.files[STAGING].problem == f"`{STAGING}` does not exist on main"


async def test_large_and_binary_files_are_named_not_read(github: GitHub) -> None:
    await github.emulator.push_files(DEPLOY_REPO, {
        "big.yaml": "x" * (1024 * 1024 + 1), "latin1.yaml": "café: 1\n".encode("latin-1")})
    files = RepoFiles()
    snapshot = await files.read(github.gh, DEPLOY_REPO, "main",
                                ["big.yaml", "latin1.yaml", STAGING, "gone.yaml", STAGING])
    assert list(snapshot.files) == ["big.yaml", "latin1.yaml", STAGING, "gone.yaml"]
    assert snapshot.files["big.yaml"].problem == "big.yaml is larger than 1048576 bytes"
    assert snapshot.files["big.yaml"].text is None
    assert snapshot.files["latin1.yaml"].problem == "`latin1.yaml` is not UTF-8 text"
    assert snapshot.files["gone.yaml"].problem == "`gone.yaml` does not exist on main"
    assert snapshot.files[STAGING].text is not None and snapshot.files[STAGING].problem is None
    assert snapshot.commit is not None
    # what the kept tree and blobs tell without asking again
    assert files.known_text(DEPLOY_REPO, snapshot.commit, "gone.yaml") == (True, None)
    assert files.known_text(DEPLOY_REPO, snapshot.commit, STAGING) == (
        True, snapshot.files[STAGING].text)
    assert files.known_text(DEPLOY_REPO, "0" * 40, STAGING) == (False, None)


def test_the_blob_cache_grows_with_the_policies_served() -> None:
    files = RepoFiles()
    assert files.capacity == 512
    files.ensure_capacity(100)
    assert files.capacity == 512
    files.ensure_capacity(2000)
    assert files.capacity == 2000


def tarball(members: dict[str, bytes], *, links: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(f"acme-deploy-abc/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(f"acme-deploy-abc/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, "a.yaml"
            archive.addfile(info)
    return out.getvalue()


def test_an_archive_stands_only_for_the_blobs_whose_sha_matches() -> None:
    wanted = {git_blob_sha(b"a: 1\n"), git_blob_sha(b"\xff\xfe"), git_blob_sha(b"kept")}
    data = tarball({"a.yaml": b"a: 1\n", "utf16.yaml": b"\xff\xfe",
                    "altered.yaml": b"kept but export-subst changed it"}, links=("link.yaml",))
    assert blobs_in_archive(data, wanted) == {git_blob_sha(b"a: 1\n"): "a: 1\n",
                                               git_blob_sha(b"\xff\xfe"): None}


@pytest.mark.parametrize("data", [b"not gzip at all", tarball({"a.yaml": b"a: 1\n"})[:40]])
def test_an_unreadable_archive_stands_for_nothing(data: bytes) -> None:
    assert blobs_in_archive(data, {git_blob_sha(b"a: 1\n")}) == {}
