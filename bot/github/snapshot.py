"""A repository's files at one commit, in a few requests however many files there are.

A read asks for the branch head (conditional: `304` while it has not moved) and that commit's
recursive tree (addressed by the commit, so it never changes and is kept, with the mode of each
entry that is not a regular file: a symbolic link, a submodule), then only for the blobs whose
sha it has not seen: blobs are immutable, so their texts are kept by sha. When many
are missing (a cold start, a bulk change), the commit is fetched as one archive
(`GET /repos/{r}/tarball/{sha}`: one API request; the download itself comes from GitHub's archive
host and is not an API request) and each file of it stands for a blob only when its git blob
sha (`sha1("blob <size>\\0" + data)`) is the one in the tree, so an archive altered by
`.gitattributes` (`export-subst`, `export-ignore`) never stands for the file: those are read
blob by blob.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import io
import logging
import sys
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gidgethub import sansio
from gidgethub.abc import GitHubAPI

from bot.caches import SizedLRU, deep_size, tree_size
from bot.github.refusals import or_none
from bot.github.repos import MAX_FILE_BYTES, FileTooLarge, branch_head, get_file

log = logging.getLogger(__name__)

# Fewer missing blobs than this are read one by one; more, and the archive is cheaper.
ARCHIVE_FROM = 8
# An archive is downloaded only when the tree's files add up to less than this.
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
MIN_BLOBS_KEPT = 512
MAX_BLOBS_KEPT = 50_000
TEXT_BYTES_KEPT = 64 * 1024 * 1024  # the texts kept, whatever their number
TREES_KEPT = 64
TREE_BYTES_KEPT = 64 * 1024 * 1024  # a tree of 100,000 files takes about 25 MB
# Binary blobs a render needs (a chart's vendored subchart archive): few, read one by one.
BINARY_BLOBS_KEPT = 64
BINARY_BYTES_KEPT = 16 * 1024 * 1024
# The git modes of a regular file (plain, executable).
FILE_MODES = ("100644", "100755")


@dataclass(frozen=True)
class FileAt:
    """One file of the snapshot: its text, or why there is none."""

    path: str
    blob: str | None = None
    text: str | None = None
    problem: str | None = None


@dataclass(frozen=True)
class Snapshot:
    commit: str | None  # the default branch's head the files were read at
    files: dict[str, FileAt]


@dataclass(frozen=True)
class TreeListing:
    """A commit's recursive tree as GitHub lists it: path → (blob sha, size) of every blob
    (regular files and symbolic links), and the git mode of every entry that is not a regular
    file (a symbolic link, 120000: a blob whose text is the link's target; a submodule,
    160000: a commit of another repository, not a blob)."""

    blobs: dict[str, tuple[str, int]]
    modes: dict[str, str]


def tree_listing(entries: Iterable[Mapping[str, Any]]) -> TreeListing:
    """The listing of the entries of a recursive "Get a tree" answer."""
    blobs: dict[str, tuple[str, int]] = {}
    modes: dict[str, str] = {}
    for item in entries:
        path, kind, mode = str(item["path"]), item.get("type"), str(item.get("mode"))
        if kind == "blob":
            blobs[path] = (str(item["sha"]), int(item.get("size") or 0))
        if kind == "commit" or (kind == "blob" and mode not in FILE_MODES):
            modes[path] = mode
    return TreeListing(blobs, modes)


def listing_size(listing: TreeListing | None) -> int:
    if listing is None:
        return tree_size(None)
    return tree_size(listing.blobs) + deep_size(listing.modes)


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class TreeTruncated(Exception):
    """GitHub does not list a commit's whole tree."""


class RepoFiles:
    """Blob texts by sha and trees by commit, shared by the status, the dashboard and the
    resync of every repository; sized from the policies being served."""

    def __init__(self, blobs: int = MIN_BLOBS_KEPT) -> None:
        self._texts: SizedLRU[str, str | None] = SizedLRU(
            max_bytes=TEXT_BYTES_KEPT, max_entries=blobs, sizeof=sys.getsizeof)
        self._trees: SizedLRU[tuple[str, str], TreeListing | None] = SizedLRU(
            max_bytes=TREE_BYTES_KEPT, max_entries=TREES_KEPT, sizeof=listing_size)
        self._binary: SizedLRU[str, bytes | None] = SizedLRU(
            max_bytes=BINARY_BYTES_KEPT, max_entries=BINARY_BLOBS_KEPT, sizeof=deep_size)

    @property
    def capacity(self) -> int:
        return self._texts.max_entries

    def ensure_capacity(self, blobs: int) -> None:
        """Keep at least `blobs` texts (twice the files a policy names: old and new), within
        `TEXT_BYTES_KEPT`."""
        self._texts.max_entries = max(self._texts.max_entries, MIN_BLOBS_KEPT, blobs)

    def known_text(self, full_name: str, commit: str, path: str) -> tuple[bool, str | None]:
        """`(True, text)` of a file at a commit from the kept trees and blobs, without a request
        (`text` None: no such file there); `(False, None)` when they do not tell."""
        listing = self._trees.get((full_name.lower(), commit))
        if listing is None:
            return False, None
        entry = listing.blobs.get(path)
        if entry is None:
            return True, None
        text = self._texts.get(entry[0])
        return (text is not None), text

    async def read(self, gh: GitHubAPI, full_name: str, branch: str, paths: Iterable[str]
                   ) -> Snapshot:
        wanted = list(dict.fromkeys(paths))
        head = await or_none(branch_head(gh, full_name, branch), 404, 409)
        listing = await self._tree(gh, full_name, head) if head else None
        tree = listing.blobs if listing is not None else None
        if tree is None:  # empty repository or a truncated tree: file by file
            return Snapshot(head, {path: await self._by_contents(gh, full_name, path, branch)
                                   for path in wanted})
        if head is not None:
            await self._prefetch(gh, full_name, head, tree, wanted)
        files: dict[str, FileAt] = {}
        for path in wanted:
            if path not in tree:
                files[path] = FileAt(path, problem=f"`{path}` does not exist on {branch}")
                continue
            sha, size = tree[path]
            if size > MAX_FILE_BYTES:
                files[path] = FileAt(path, sha, problem=f"{path} is larger than "
                                                        f"{MAX_FILE_BYTES} bytes")
                continue
            text = await self._text(gh, full_name, sha)
            files[path] = FileAt(path, sha, text, None if text is not None
                                 else f"`{path}` is not UTF-8 text")
        return Snapshot(head, files)

    async def texts_at(self, gh: GitHubAPI, full_name: str, commit: str, paths: Iterable[str], *,
                       archive_from: int = ARCHIVE_FROM) -> dict[str, str | None]:
        """The texts of ``paths`` at ``commit`` (None: not UTF-8 text or larger than GitHub
        returns); from ``archive_from`` unknown blobs on, one archive instead of a request
        each. Raises KeyError for a path the commit's tree does not hold, and TreeTruncated
        when GitHub does not list the whole tree."""
        wanted = list(dict.fromkeys(paths))
        await self.from_archive(gh, full_name, commit, wanted, archive_from=archive_from)
        tree = await self.tree(gh, full_name, commit)
        texts: dict[str, str | None] = {}
        for path in wanted:
            sha, size = tree[path]
            texts[path] = None if size > MAX_FILE_BYTES else await self._text(gh, full_name, sha)
        return texts

    async def from_archive(self, gh: GitHubAPI, full_name: str, commit: str, paths: Iterable[str],
                           *, archive_from: int) -> None:
        """The texts of ``paths`` from the commit's archive when ``archive_from`` or more are
        unknown; nothing is read blob by blob here."""
        wanted = list(dict.fromkeys(paths))
        # A build of many overlays reads them all at once: room for every text it asks for.
        self.ensure_capacity(min(MAX_BLOBS_KEPT, 2 * len(wanted)))
        await self._prefetch(gh, full_name, commit, await self.tree(gh, full_name, commit), wanted,
                             archive_from)

    async def blob_bytes(self, gh: GitHubAPI, full_name: str, sha: str) -> bytes | None:
        """A blob's bytes, whatever they are (None: GitHub's answer is not base64), kept by
        sha; the caller bounds the size from the tree."""
        if sha in self._binary:
            return self._binary[sha]
        data = await gh.getitem(f"/repos/{full_name}/git/blobs/{sha}")
        try:
            found: bytes | None = base64.b64decode(data.get("content") or "")
        except (binascii.Error, ValueError):
            found = None
        self._binary[sha] = found
        return found

    async def _text(self, gh: GitHubAPI, full_name: str, sha: str) -> str | None:
        """A blob's text, kept by its sha (None: not UTF-8)."""
        if sha in self._texts:
            return self._texts[sha]
        text = await _blob_text(gh, full_name, sha)
        self._texts[sha] = text
        return text

    async def tree(self, gh: GitHubAPI, full_name: str, commit: str) -> dict[str, tuple[str, int]]:
        """path → (blob sha, size) of every file of ``commit``; TreeTruncated when GitHub
        cuts the listing (more than 100,000 entries or 7 MB)."""
        return (await self.listing(gh, full_name, commit)).blobs

    async def listing(self, gh: GitHubAPI, full_name: str, commit: str) -> TreeListing:
        """The tree of ``commit`` with the modes of its entries that are not regular files;
        TreeTruncated when GitHub cuts the listing."""
        listing = await self._tree(gh, full_name, commit)
        if listing is None:
            raise TreeTruncated(f"GitHub lists only part of the tree of {commit[:12]}")
        return listing

    async def _prefetch(self, gh: GitHubAPI, full_name: str, commit: str,
                        tree: dict[str, tuple[str, int]], wanted: Iterable[str],
                        archive_from: int = ARCHIVE_FROM) -> None:
        """Many texts missing: read them from the commit's archive in one request."""
        missing = {tree[path][0] for path in wanted
                   if path in tree and tree[path][0] not in self._texts}
        if len(missing) >= archive_from and sum(
                size for _, size in tree.values()) <= MAX_ARCHIVE_BYTES:
            await self._from_archive(gh, full_name, commit, missing)

    async def _tree(self, gh: GitHubAPI, full_name: str, commit: str) -> TreeListing | None:
        """The tree of a commit; None when GitHub truncates the listing."""
        key = (full_name.lower(), commit)
        if key in self._trees:
            return self._trees[key]
        found = await gh.getitem(f"/repos/{full_name}/git/trees/{commit}?recursive=1")
        listing = None if found.get("truncated") else tree_listing(found.get("tree") or [])
        self._trees[key] = listing
        return listing

    async def _by_contents(self, gh: GitHubAPI, full_name: str, path: str, branch: str) -> FileAt:
        try:
            found = await get_file(gh, full_name, path)
        except FileTooLarge as exc:
            return FileAt(path, problem=str(exc))
        if found is None:
            return FileAt(path, problem=f"`{path}` does not exist on {branch}")
        self._texts[found.sha] = found.text
        return FileAt(path, found.sha, found.text)

    async def _from_archive(self, gh: GitHubAPI, full_name: str, commit: str, wanted: set[str]
                            ) -> None:
        data = await download_archive(gh, full_name, commit)
        if data is None:
            return
        # Decompressing and hashing a large repository is CPU work: not on the event loop.
        found = await asyncio.to_thread(blobs_in_archive, data, wanted)
        for sha, text in found.items():
            self._texts[sha] = text


async def download_archive(gh: GitHubAPI, full_name: str, commit: str) -> bytes | None:
    """The commit's tarball, or None when GitHub does not give one (the caller reads blobs)."""
    url = f"{gh.base_url}/repos/{full_name}/tarball/{quote(commit, safe='')}"
    headers = sansio.create_headers(gh.requester, accept="application/vnd.github+json",
                                    oauth_token=gh.oauth_token)
    await gh.manage_rate_limit(method="GET", url=url)
    # The API answers 302; the HTTP client follows it to the archive host.
    status, _, body = await gh._request("GET", url, headers)
    if status != 200 or len(body) > MAX_ARCHIVE_BYTES:
        log.info("repository archive unavailable; reading blobs",
                 extra={"repository": full_name, "status": status})
        return None
    return body


def blobs_in_archive(data: bytes, wanted: set[str]) -> dict[str, str | None]:
    """Texts of the archive's regular files whose git blob sha is in `wanted`."""
    found: dict[str, str | None] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive:
                if not member.isfile() or member.size > MAX_FILE_BYTES:
                    continue
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                raw = handle.read()
                sha = git_blob_sha(raw)
                if sha in wanted:
                    found[sha] = _decoded(raw)
    except (tarfile.TarError, OSError, EOFError) as exc:
        log.warning("repository archive unreadable; reading blobs", extra={"error": str(exc)})
    return found


async def _blob_text(gh: GitHubAPI, full_name: str, sha: str) -> str | None:
    data = await gh.getitem(f"/repos/{full_name}/git/blobs/{sha}")
    try:
        raw = base64.b64decode(data.get("content") or "")
    except (binascii.Error, ValueError):
        return None
    return _decoded(raw)


def _decoded(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
