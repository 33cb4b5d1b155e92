"""A deployment repository checked out on disk: its root and the files its policy names.

Used by the offline commands (`check-config --repo`, `sandbox --config`). The root is the
folder that holds `.github/` above the policy (`ROOT/.github/conveyor.yml`), or the policy's
own folder when the policy is not inside a `.github/` folder. Only the files the policy names
(every service × environment path) are read, plus the local files the kustomizations among
them name (and, for the sandbox, the files of the charts they lie in), so that pointing at a
policy in a large folder never walks that folder.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from bot.configcheck import kustomize
from bot.configcheck.documents import parse_documents
from bot.domain.policy import Policy
from bot.github.immutable import Listing
from bot.github.repos import MAX_FILE_BYTES, FileTooLarge, RepoFile

MAX_FILES = 2000  # files read from one repository, the named ones and what they include


def repository_root(policy_file: Path) -> Path:
    """The folder holding `.github/` above the policy, else the policy's folder."""
    resolved = policy_file.resolve()
    for parent in resolved.parents:
        if parent.name == ".github":
            return parent.parent
    return resolved.parent


def not_utf8(data: bytes, exc: UnicodeDecodeError) -> str:
    """Where a file stops being UTF-8, as a person would look for it."""
    before = data[: exc.start]
    line = before.count(b"\n") + 1
    column = exc.start - (before.rfind(b"\n") + 1) + 1
    return (f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line}, column {column}); "
            "Conveyor edits UTF-8 files only")


def unreadable_reason(exc: OSError | RuntimeError) -> str:
    """Why a path cannot be read; Python 3.11's `Path.resolve` raises RuntimeError for a loop."""
    if isinstance(exc, RuntimeError):
        return "symbolic link loop"
    return exc.strerror or str(exc)


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long
        return False


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


@dataclass(frozen=True)
class Unreadable:
    """A file that is named but cannot be used; `line` is where, 1 when not tied to a line."""

    path: str
    line: int
    message: str


class LocalFolder:
    """A folder read like a repository at one commit (the config check's `FileSource`)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, path: str) -> Path | None:
        """The file of a repository path, or None when it would leave the repository or
        cannot be resolved (a symbolic link loop)."""
        try:
            return self._resolve(path)
        except (OSError, RuntimeError):
            return None

    def _resolve(self, path: str) -> Path | None:
        target = (self.root / path).resolve() if path else self.root
        return target if target.is_relative_to(self.root) else None

    async def listing(self, directory: str) -> Listing | None:
        target = self.resolve(directory)
        if target is None or not is_dir(target):
            return None
        entries: Listing = {}
        with os.scandir(target) as scanned:
            for entry in scanned:
                entries[entry.name] = ("symlink" if entry.is_symlink()
                                       else "dir" if entry.is_dir() else "file")
        return entries

    async def file(self, path: str) -> RepoFile | None:
        """The file's text; None when it is missing or not UTF-8 (FileTooLarge when large)."""
        read = self.read(path)
        return read if isinstance(read, RepoFile) else None

    def read(self, path: str) -> RepoFile | Unreadable | None:
        """The file's text, why it cannot be used, or None when it does not exist."""
        try:
            target = self._resolve(path)
            if target is None:
                return Unreadable(path, 1, "the path leaves the repository")
            if not target.is_file():
                return None
            with open(target, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except (OSError, RuntimeError) as exc:
            return Unreadable(path, 1, f"cannot read: {unreadable_reason(exc)}")
        if len(data) > MAX_FILE_BYTES:
            raise FileTooLarge(f"{path} is larger than {MAX_FILE_BYTES} bytes")
        try:
            return RepoFile(path, data.decode("utf-8"), "")
        except UnicodeDecodeError as exc:
            before = data[: exc.start]
            return Unreadable(path, before.count(b"\n") + 1, not_utf8(data, exc))


@dataclass
class PolicyFiles:
    """The texts of the files a policy names (and what their kustomizations include)."""

    texts: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # named by the policy, not on disk
    unreadable: list[Unreadable] = field(default_factory=list)


def named_paths(policy: Policy) -> list[str]:
    """Every service × environment file, in policy order, each once."""
    return list(dict.fromkeys(policy.path_for(service, env)
                              for service in policy.services for env in policy.environments))


def read_policy_files(root: Path, policy: Policy) -> PolicyFiles:
    folder = LocalFolder(root)
    found = PolicyFiles()
    queue = named_paths(policy)
    named = set(queue)
    seen: set[str] = set()
    while queue and len(seen) < MAX_FILES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            read = folder.read(path)
        except FileTooLarge as exc:
            found.unreadable.append(Unreadable(path, 1, str(exc)))
            continue
        if read is None:
            if path in named:
                found.missing.append(path)
            elif folder.resolve(path) is not None and is_dir(root / path):
                queue += [posixpath.join(path, name) for name in kustomize.KUSTOMIZATION_NAMES]
            continue
        if isinstance(read, Unreadable):
            found.unreadable.append(read)
            continue
        found.texts[path] = read.text
        if kustomize.is_kustomization(path):
            queue += included_by(path, read.text)
    return found


def chart_files(root: Path, policy: Policy) -> dict[str, str]:
    """The text files of every chart a policy file lies in (a ``Chart.yaml`` at or above it):
    what rendering its environment reads besides the file itself."""
    folder = LocalFolder(root)
    charts: list[str] = []
    for path in named_paths(policy):
        parent = posixpath.dirname(path)
        while True:
            if is_file(root / parent / "Chart.yaml") and parent not in charts:
                charts.append(parent)
                break
            if not parent:
                break
            parent = posixpath.dirname(parent)
    found: dict[str, str] = {}
    for chart in charts:
        for directory, subfolders, names in os.walk(root / chart):
            subfolders[:] = sorted(d for d in subfolders if d != ".git")
            for name in sorted(names):
                path = (Path(directory) / name).relative_to(root).as_posix()
                if len(found) >= MAX_FILES:
                    return found
                try:
                    read = folder.read(path)
                except FileTooLarge:
                    continue
                if isinstance(read, RepoFile):
                    found[path] = read.text
    return found


def included_by(path: str, text: str) -> list[str]:
    """The local paths a kustomization names (a directory stands for its kustomization)."""
    parsed = parse_documents(text)
    if not parsed.ok or not parsed.documents:
        return []
    refs, _ = kustomize.references(parsed.documents[0], posixpath.dirname(path))
    return [ref.target for ref in refs if ref.target]
