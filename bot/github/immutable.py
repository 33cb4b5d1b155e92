"""What GitHub answers about a commit sha never changes: files and commits read at a sha and
the directory layout of a commit are kept here, one store per app, and served without a
request. Everything else goes through gidgethub's ETag cache."""

from __future__ import annotations

import re
from typing import Any

import cachetools

SHA = re.compile(r"[0-9a-f]{40}")
Listing = dict[str, str]  # name → "file" | "dir" | "symlink" | "submodule"
Layout = dict[str, Listing]  # directory ("" for the root) → its entries


class ShaStore:
    def __init__(self, *, responses: int = 4096, layouts: int = 16, listings: int = 2048
                 ) -> None:
        # (repo, path, sha) → the file or None; (repo, "commit", sha) → the commit
        self.responses: cachetools.LRUCache[tuple[str, str, str], Any] = cachetools.LRUCache(
            maxsize=responses)
        # (repo, sha) → every directory of the commit, or None when GitHub cut the tree short
        self.layouts: cachetools.LRUCache[tuple[str, str], Layout | None] = cachetools.LRUCache(
            maxsize=layouts)
        # (repo, sha, directory) → its entries, or None when it does not exist
        self.listings: cachetools.LRUCache[tuple[str, str, str], Listing | None] = (
            cachetools.LRUCache(maxsize=listings))
