"""The repository at one commit: its layout and its files, read once and remembered.

The layout (which paths exist, files or directories) comes from one recursive git tree; when
GitHub truncates that (above 100,000 entries) each directory needed is listed through the
contents API instead (the root through the commit's own tree). File texts come through the
contents API (`get_file`). A commit never changes, so layouts and listings are kept
process-wide, as `get_file` keeps files, and concurrent readers of one directory share a
single request.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.github.client import sha_store
from bot.github.immutable import Layout, Listing
from bot.github.refusals import or_none
from bot.github.repos import RepoFile, content_path, get_file

T = TypeVar("T")
CONCURRENCY = 8
_TREE_TYPES = {"blob": "file", "tree": "dir", "commit": "submodule"}


class FileSource(Protocol):
    """What the checks read a repository through: GitHub at a commit, or a local folder."""

    async def listing(self, directory: str) -> Listing | None: ...

    async def file(self, path: str) -> RepoFile | None: ...


async def kind_of(source: FileSource, path: str) -> str | None:
    """"file", "dir" (or "symlink", "submodule") for an existing path; None otherwise."""
    if path == "":
        return "dir"
    entries = await source.listing(posixpath.dirname(path))
    return None if entries is None else entries.get(posixpath.basename(path))



def layout_of(tree: list[dict[str, Any]]) -> Layout:
    """A recursive git tree's entries → the entries of every directory."""
    layout: Layout = {"": {}}
    for entry in tree:
        path = str(entry.get("path", ""))
        kind = _TREE_TYPES.get(str(entry.get("type")), "file")
        if kind == "file" and entry.get("mode") == "120000":
            kind = "symlink"
        layout.setdefault(posixpath.dirname(path), {})[posixpath.basename(path)] = kind
        if kind == "dir":
            layout.setdefault(path, {})
    return layout


class RepoView:
    def __init__(self, gh: GitHubAPI, full_name: str, sha: str, *, use_tree: bool = True) -> None:
        self.gh = gh
        self.full_name = full_name
        self.sha = sha
        self.use_tree = use_tree
        self._limit = asyncio.Semaphore(CONCURRENCY)
        self._pending: dict[tuple[str, str], asyncio.Task[Any]] = {}
        self._known = sha_store(gh)

    async def _once(self, key: tuple[str, str], fetch: Callable[[], Awaitable[T]]) -> T:
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(fetch())
            self._pending[key] = task
        result: T = await task
        return result

    async def layout(self) -> Layout | None:
        """Every directory at the commit, or None when the tree came back truncated."""
        key = (self.full_name.lower(), self.sha)
        if key in self._known.layouts:
            return self._known.layouts[key]
        return await self._once(("tree", ""), self._tree)

    async def _tree(self) -> Layout | None:
        url = f"/repos/{self.full_name}/git/trees/{quote(self.sha)}?recursive=1"
        async with self._limit:
            data = await self.gh.getitem(url)
        result = None if data.get("truncated") else layout_of(list(data.get("tree") or []))
        self._known.layouts[(self.full_name.lower(), self.sha)] = result
        return result

    async def listing(self, directory: str) -> Listing | None:
        """The entries of ``directory`` ("" for the root), or None when it does not exist."""
        if self.use_tree:
            layout = await self.layout()
            if layout is not None:
                return layout.get(directory)
        key = (self.full_name.lower(), self.sha, directory)
        if key in self._known.listings:
            return self._known.listings[key]
        return await self._once(("dir", directory), lambda: self._list(directory))

    async def _list(self, directory: str) -> Listing | None:
        if not directory:  # the root: the commit's own tree, one level deep
            async with self._limit:
                data = await self.gh.getitem(f"/repos/{self.full_name}/git/trees/{quote(self.sha)}")
            result: Listing | None = layout_of(list(data.get("tree") or []))[""]
            self._known.listings[(self.full_name.lower(), self.sha, directory)] = result
            return result
        url = f"/repos/{self.full_name}/contents/{content_path(directory)}?ref={quote(self.sha)}"
        async with self._limit:
            data = await or_none(self.gh.getitem(url), 404)
        result = (
            {str(e["name"]): str(e["type"]) for e in data if isinstance(e, dict)}
            if isinstance(data, list)
            else None
        )
        self._known.listings[(self.full_name.lower(), self.sha, directory)] = result
        return result

    async def file(self, path: str) -> RepoFile | None:
        """The file's text at the commit (FileTooLarge is raised as `get_file` does)."""
        return await self._once(("file", path), lambda: self._get(path))

    async def _get(self, path: str) -> RepoFile | None:
        async with self._limit:
            return await get_file(self.gh, self.full_name, path, self.sha)
