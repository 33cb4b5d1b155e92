"""The repository at one commit, read through the contents API and remembered.

A commit never changes, so directory listings are kept process-wide (files already are, by
`get_file`); concurrent readers of one directory share a single request.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

from ...github.repos import RepoFile, content_path, get_file

T = TypeVar("T")
CONCURRENCY = 8
Listing = dict[str, str]  # name → "file" | "dir" | "symlink" | "submodule"
_listings: cachetools.LRUCache[tuple[str, str, str], Listing | None] = cachetools.LRUCache(
    maxsize=2048
)


class RepoView:
    def __init__(self, gh: GitHubAPI, repo: str, sha: str) -> None:
        self.gh = gh
        self.repo = repo
        self.sha = sha
        self._limit = asyncio.Semaphore(CONCURRENCY)
        self._pending: dict[tuple[str, str], asyncio.Task[Any]] = {}

    async def _once(self, key: tuple[str, str], fetch: Callable[[], Awaitable[T]]) -> T:
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(fetch())
            self._pending[key] = task
        result: T = await task
        return result

    async def listing(self, directory: str) -> Listing | None:
        """The entries of ``directory`` ("" for the root), or None when it does not exist."""
        key = (self.repo.lower(), self.sha, directory)
        if key in _listings:
            return _listings[key]
        return await self._once(("dir", directory), lambda: self._list(directory))

    async def _list(self, directory: str) -> Listing | None:
        key = (self.repo.lower(), self.sha, directory)
        url = f"/repos/{self.repo}/contents/{content_path(directory)}?ref={quote(self.sha)}"
        async with self._limit:
            try:
                data = await self.gh.getitem(url)
            except gidgethub.BadRequest as exc:
                if exc.status_code != 404:
                    raise
                data = None
        result = (
            {str(e["name"]): str(e["type"]) for e in data if isinstance(e, dict)}
            if isinstance(data, list)
            else None
        )
        _listings[key] = result
        return result

    async def kind(self, path: str) -> str | None:
        """"file", "dir" (or "symlink", "submodule") for an existing path; None otherwise."""
        if path == "":
            return "dir"
        entries = await self.listing(posixpath.dirname(path))
        return None if entries is None else entries.get(posixpath.basename(path))

    async def file(self, path: str) -> RepoFile | None:
        """The file's text at the commit (FileTooLarge is raised as `get_file` does)."""
        return await self._once(("file", path), lambda: self._get(path))

    async def _get(self, path: str) -> RepoFile | None:
        async with self._limit:
            return await get_file(self.gh, self.repo, path, self.sha)
