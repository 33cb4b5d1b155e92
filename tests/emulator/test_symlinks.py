"""Symbolic links as GitHub stores and serves them: blobs of mode 120000 whose data is the
target ("Get a tree", "Create a tree", "Get repository content", the archive)."""

from __future__ import annotations

import base64
import io
import tarfile

from gidgethub.aiohttp import GitHubAPI

from bot.github.snapshot import download_archive
from conveyor_emulator import Emulator

R = "/repos/acme/deploy"


async def test_a_pushed_link_is_a_blob_of_mode_120000(emulator: Emulator, gh: GitHubAPI) -> None:
    await emulator.push_files("acme/deploy", {"docs/real.md": "real\n"},
                              symlinks={"docs/link.md": "real.md"})
    head = (await gh.getitem(R + "/git/ref/heads/main"))["object"]["sha"]
    tree = await gh.getitem(R + f"/git/trees/{head}?recursive=1")
    entries = {entry["path"]: entry for entry in tree["tree"]}
    assert (entries["docs/link.md"]["type"], entries["docs/link.md"]["mode"],
            entries["docs/link.md"]["size"]) == ("blob", "120000", len("real.md"))
    assert entries["docs/real.md"]["mode"] == "100644"
    blob = await gh.getitem(R + f"/git/blobs/{entries['docs/link.md']['sha']}")
    assert base64.b64decode(blob["content"]) == b"real.md"
    archive = await download_archive(gh, "acme/deploy", head)
    assert archive is not None
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        link = next(m for m in tar.getmembers() if m.name.endswith("/docs/link.md"))
    assert link.issym() and link.linkname == "real.md"
    assert emulator.violations == []


async def test_the_contents_api_follows_a_link_only_to_a_regular_file(
        emulator: Emulator, gh: GitHubAPI) -> None:
    await emulator.push_files("acme/deploy", {"docs/real.md": "real\n"}, symlinks={
        "docs/link.md": "real.md", "docs/up.md": "../README.md", "docs/out.md": "../../passwd",
        "docs/folder": ".", "docs/again.md": "link.md"})
    followed = await gh.getitem(R + "/contents/docs/link.md")
    assert (followed["type"], followed["path"]) == ("file", "docs/real.md")
    assert base64.b64decode(followed["content"]) == b"real\n"
    assert (await gh.getitem(R + "/contents/docs/up.md"))["path"] == "README.md"
    for path, target in (("docs/out.md", "../../passwd"), ("docs/folder", "."),
                         ("docs/again.md", "link.md")):
        described = await gh.getitem(R + f"/contents/{path}")
        assert (described["type"], described["path"], described["target"]) == (
            "symlink", path, target)
        assert "content" not in described
    assert emulator.violations == []


async def test_a_tree_entry_of_mode_120000_is_a_link(emulator: Emulator, gh: GitHubAPI) -> None:
    head = (await gh.getitem(R + "/git/ref/heads/main"))["object"]["sha"]
    base = (await gh.getitem(R + f"/git/commits/{head}"))["tree"]["sha"]
    created = await gh.post(R + "/git/trees", data={"base_tree": base, "tree": [
        {"path": "latest", "mode": "120000", "type": "blob", "content": "README.md"}]})
    entry = next(e for e in created["tree"] if e["path"] == "latest")
    assert (entry["type"], entry["mode"]) == ("blob", "120000")
    assert emulator.violations == []
