"""A content-addressed git object store: blobs, nested trees, commits and annotated tags.

Object ids are SHA-1 over git's own serialisation, so a blob's sha equals `git hash-object`.
"""

from __future__ import annotations

import difflib
import hashlib
import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

FILE_MODE = "100644"
TREE_MODE = "040000"
SYMLINK_MODE = "120000"  # a blob whose data is the path the link names


@dataclass(frozen=True)
class Signature:
    name: str
    email: str
    date: datetime

    def git_line(self) -> str:
        return f"{self.name} <{self.email}> {int(self.date.timestamp())} +0000"


@dataclass(frozen=True)
class Blob:
    data: bytes


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    type: str  # "blob" | "tree"
    sha: str


@dataclass(frozen=True)
class Tree:
    entries: Mapping[str, TreeEntry]


@dataclass(frozen=True)
class Commit:
    tree: str
    parents: tuple[str, ...]
    message: str
    author: Signature
    committer: Signature
    verified: bool = False


@dataclass(frozen=True)
class Tag:
    tag: str
    object: str
    object_type: str
    message: str
    tagger: Signature


GitObject = Blob | Tree | Commit | Tag


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str  # added | modified | removed | renamed
    old_sha: str | None
    new_sha: str | None
    additions: int
    deletions: int
    patch: str
    previous_filename: str | None = None

    @property
    def changes(self) -> int:
        return self.additions + self.deletions


class MergeConflict(Exception):
    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


@dataclass
class GitStore:
    objects: dict[str, GitObject] = field(default_factory=dict)

    # -- writing -------------------------------------------------------------------------------
    def _put(self, kind: str, body: bytes, obj: GitObject) -> str:
        header = f"{kind} {len(body)}\0".encode()
        sha = hashlib.sha1(header + body).hexdigest()
        self.objects.setdefault(sha, obj)
        return sha

    def put_blob(self, data: bytes) -> str:
        return self._put("blob", data, Blob(data))

    def put_tree(self, entries: Mapping[str, TreeEntry]) -> str:
        body = b""
        for name in sorted(entries, key=lambda n: n + "/" if entries[n].type == "tree" else n):
            entry = entries[name]
            mode = "40000" if entry.type == "tree" else entry.mode
            body += f"{mode} {name}\0".encode() + bytes.fromhex(entry.sha)
        return self._put("tree", body, Tree(dict(entries)))

    def put_commit(self, commit: Commit) -> str:
        lines = [f"tree {commit.tree}"]
        lines += [f"parent {p}" for p in commit.parents]
        lines.append(f"author {commit.author.git_line()}")
        lines.append(f"committer {commit.committer.git_line()}")
        body = ("\n".join(lines) + "\n\n" + commit.message).encode()
        return self._put("commit", body, commit)

    def put_tag(self, tag: Tag) -> str:
        body = (
            f"object {tag.object}\ntype {tag.object_type}\ntag {tag.tag}\n"
            f"tagger {tag.tagger.git_line()}\n\n{tag.message}"
        ).encode()
        return self._put("tag", body, tag)

    def write_tree(self, files: Mapping[str, tuple[str, str]]) -> str:
        """Build nested trees from a flat {path: (mode, blob sha)} mapping."""
        children: dict[str, dict[str, tuple[str, str]]] = {}
        entries: dict[str, TreeEntry] = {}
        for path, (mode, sha) in files.items():
            head, sep, rest = path.partition("/")
            if sep:
                children.setdefault(head, {})[rest] = (mode, sha)
            else:
                entries[head] = TreeEntry(mode, "blob", sha)
        for name, sub in children.items():
            entries[name] = TreeEntry(TREE_MODE, "tree", self.write_tree(sub))
        return self.put_tree(entries)

    # -- reading -------------------------------------------------------------------------------
    def get(self, sha: str) -> GitObject | None:
        return self.objects.get(sha)

    def blob(self, sha: str) -> Blob | None:
        obj = self.objects.get(sha)
        return obj if isinstance(obj, Blob) else None

    def tree(self, sha: str) -> Tree | None:
        obj = self.objects.get(sha)
        return obj if isinstance(obj, Tree) else None

    def commit(self, sha: str) -> Commit | None:
        obj = self.objects.get(sha)
        return obj if isinstance(obj, Commit) else None

    def tag(self, sha: str) -> Tag | None:
        obj = self.objects.get(sha)
        return obj if isinstance(obj, Tag) else None

    def resolve_prefix(self, prefix: str) -> str | None:
        if len(prefix) == 40:
            return prefix if prefix in self.objects else None
        if len(prefix) < 7:
            return None
        found = [sha for sha in self.objects if sha.startswith(prefix)]
        return found[0] if len(found) == 1 else None

    def flatten(self, tree_sha: str, prefix: str = "") -> dict[str, tuple[str, str]]:
        tree = self.tree(tree_sha)
        out: dict[str, tuple[str, str]] = {}
        if tree is None:
            return out
        for name, entry in tree.entries.items():
            path = prefix + name
            if entry.type == "tree":
                out.update(self.flatten(entry.sha, path + "/"))
            else:
                out[path] = (entry.mode, entry.sha)
        return out

    def lookup(self, tree_sha: str, path: str) -> TreeEntry | None:
        """The entry at `path` below a tree ("" is the tree itself)."""
        entry = TreeEntry(TREE_MODE, "tree", tree_sha)
        for part in [p for p in path.strip("/").split("/") if p]:
            tree = self.tree(entry.sha) if entry.type == "tree" else None
            if tree is None or part not in tree.entries:
                return None
            entry = tree.entries[part]
        return entry

    def walk(self, tree_sha: str, prefix: str = "") -> Iterator[tuple[str, TreeEntry]]:
        tree = self.tree(tree_sha)
        if tree is None:
            return
        for name in sorted(tree.entries):
            entry = tree.entries[name]
            yield prefix + name, entry
            if entry.type == "tree":
                yield from self.walk(entry.sha, prefix + name + "/")

    def text(self, blob_sha: str) -> str:
        blob = self.blob(blob_sha)
        return blob.data.decode("utf-8", "replace") if blob else ""

    # -- history -------------------------------------------------------------------------------
    def ancestors(self, sha: str) -> list[str]:
        """`sha` and every ancestor, newest first (breadth-first by commit date)."""
        seen: set[str] = set()
        order: list[str] = []
        counter = 0
        frontier: list[tuple[float, int, str]] = [(-self._date(sha), counter, sha)]
        while frontier:
            _, _, current = heapq.heappop(frontier)
            if current in seen:
                continue
            seen.add(current)
            order.append(current)
            commit = self.commit(current)
            for parent in commit.parents if commit else ():
                if parent not in seen:
                    counter += 1
                    heapq.heappush(frontier, (-self._date(parent), counter, parent))
        return order

    def _date(self, sha: str) -> float:
        commit = self.commit(sha)
        return commit.committer.date.timestamp() if commit else 0.0

    def merge_base(self, a: str, b: str) -> str | None:
        theirs = set(self.ancestors(b))
        for sha in self.ancestors(a):
            if sha in theirs:
                return sha
        return None

    def commits_between(self, base: str, head: str) -> list[str]:
        """Commits reachable from head but not from base, oldest first."""
        excluded = set(self.ancestors(base))
        return [s for s in reversed(self.ancestors(head)) if s not in excluded]

    def is_ancestor(self, maybe_ancestor: str, sha: str) -> bool:
        return maybe_ancestor in self.ancestors(sha)

    # -- diffs and merges ------------------------------------------------------------------------
    def diff(self, old_tree: str | None, new_tree: str) -> list[FileChange]:
        old = self.flatten(old_tree) if old_tree else {}
        new = self.flatten(new_tree)
        removed = {p: s for p, (_, s) in old.items() if p not in new}
        added = {p: s for p, (_, s) in new.items() if p not in old}
        changes: list[FileChange] = []
        renamed_from: dict[str, str] = {}
        by_sha = {sha: path for path, sha in removed.items()}
        for path, sha in added.items():
            if sha in by_sha and by_sha[sha] not in renamed_from.values():
                renamed_from[path] = by_sha[sha]
        for path in sorted(set(old) | set(new)):
            o = old.get(path)
            n = new.get(path)
            if path in renamed_from:
                changes.append(
                    FileChange(path, "renamed", n[1] if n else None, n[1] if n else None, 0, 0,
                               "", previous_filename=renamed_from[path])
                )
            elif path in renamed_from.values():
                continue
            elif o is None and n is not None:
                changes.append(self._change(path, "added", None, n[1]))
            elif n is None and o is not None:
                changes.append(self._change(path, "removed", o[1], None))
            elif o is not None and n is not None and o[1] != n[1]:
                changes.append(self._change(path, "modified", o[1], n[1]))
        return changes

    def _change(self, path: str, status: str, old: str | None, new: str | None) -> FileChange:
        a = self.text(old).splitlines(keepends=True) if old else []
        b = self.text(new).splitlines(keepends=True) if new else []
        lines = list(difflib.unified_diff(a, b, n=3))[2:]
        patch = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        adds = sum(1 for ln in lines if ln.startswith("+"))
        dels = sum(1 for ln in lines if ln.startswith("-"))
        return FileChange(path, status, old, new, adds, dels, patch.rstrip("\n"))

    def three_way(self, base_tree: str | None, ours_tree: str, theirs_tree: str) -> str:
        """Merge two trees against their common base; raises MergeConflict."""
        base = self.flatten(base_tree) if base_tree else {}
        ours = self.flatten(ours_tree)
        theirs = self.flatten(theirs_tree)
        result: dict[str, tuple[str, str]] = {}
        conflicts: list[str] = []
        for path in sorted(set(base) | set(ours) | set(theirs)):
            b, o, t = base.get(path), ours.get(path), theirs.get(path)
            if o == t:
                chosen = o
            elif o == b:
                chosen = t
            elif t == b:
                chosen = o
            else:
                conflicts.append(path)
                continue
            if chosen is not None:
                result[path] = chosen
        if conflicts:
            raise MergeConflict(conflicts)
        return self.write_tree(result)
