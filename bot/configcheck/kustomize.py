"""Kustomization files: what they name must exist, and their ``images`` must be well formed.

Pure: the references are listed here with the lines that hold them; whether each exists at
the change's head is asked of the repository by the caller.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bot.configcheck.documents import Document, Path
from bot.configcheck.messages import suggest

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
IMAGE_KEYS = ("name", "newName", "newTag", "digest", "tagSuffix")
_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_REMOTE_PREFIXES = ("github.com/", "gitlab.com/", "bitbucket.org/", "git@", "git::", "ssh:")
# field → what it may name: a file, or a file or a directory (another kustomization)
_LISTS = {
    "resources": "file or directory",
    "bases": "file or directory",
    "components": "file or directory",
    "crds": "file",
    "patchesStrategicMerge": "file",
    "generators": "file or directory",
    "transformers": "file or directory",
    "validators": "file or directory",
}
_PATH_LISTS = ("patches", "patchesJson6902", "replacements")
_GENERATORS = ("configMapGenerator", "secretGenerator")


@dataclass(frozen=True)
class Reference:
    """A path a kustomization names, resolved against its directory."""

    field: str
    entry: str
    line: int
    target: str  # repository path, normalised
    may_be_directory: bool


def is_kustomization(path: str) -> bool:
    return posixpath.basename(path) in KUSTOMIZATION_NAMES


def is_remote(entry: str) -> bool:
    return "://" in entry or entry.startswith(_REMOTE_PREFIXES)


def _entries(doc: Document) -> Iterator[tuple[str, str, Path, bool]]:
    """(field, entry, path in the document, may be a directory) for every local path named."""
    data = doc.data
    for key, kind in _LISTS.items():
        for index, item in enumerate(_list(data.get(key))):
            if isinstance(item, str) and "\n" not in item:  # not an inline patch
                yield key, item, (key, index), kind != "file"
    for key in _PATH_LISTS:
        for index, item in enumerate(_list(data.get(key))):
            if isinstance(item, dict) and isinstance(item.get("path"), str):
                yield key, item["path"], (key, index, "path"), False
    for key in _GENERATORS:
        for index, item in enumerate(_list(data.get(key))):
            if not isinstance(item, dict):
                continue
            for sub in ("files", "envs"):
                for position, entry in enumerate(_list(item.get(sub))):
                    if isinstance(entry, str):
                        # files: [key=path] names the key the file's content is stored under
                        yield key, entry.rpartition("=")[2], (key, index, sub, position), False
            if isinstance(item.get("env"), str):
                yield key, item["env"], (key, index, "env"), False


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def references(doc: Document, directory: str) -> tuple[list[Reference], list[tuple[int, str]]]:
    """The local paths ``doc`` names, and findings for those that cannot be local paths."""
    refs: list[Reference] = []
    findings: list[tuple[int, str]] = []
    if not isinstance(doc.data, dict):
        return refs, findings
    for key in (*_LISTS, *_PATH_LISTS, *_GENERATORS):
        if key in doc.data and not isinstance(doc.data[key], list):
            findings.append((doc.line_of((key,)), f"{key}: expected a list"))
    for key, entry, path, may_be_dir in _entries(doc):
        line = doc.line_of(path)
        if is_remote(entry):
            continue
        if not entry.strip() or entry.startswith("/"):
            findings.append((line, f"{key}: '{entry}' is not a relative path"))
            continue
        target = posixpath.normpath(posixpath.join(directory, entry))
        if target == ".." or target.startswith("../"):
            findings.append((line, f"{key}: '{entry}' points outside the repository"))
            continue
        refs.append(Reference(key, entry, line, "" if target == "." else target, may_be_dir))
    return refs, findings


PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")


def patch_targets(refs: list[Reference]) -> set[str]:
    """The files ``refs`` name as patches: partial resources by design."""
    return {ref.target for ref in refs if ref.field in PATCH_FIELDS}


def includes(refs: list[Reference], path: str) -> bool:
    """Whether one of ``refs`` names ``path`` or a directory holding it."""
    return any(
        ref.target == path or (ref.may_be_directory and path.startswith(ref.target + "/"))
        for ref in refs
    )


def image_findings(doc: Document) -> list[tuple[int, str]]:
    """Malformed ``images`` entries, and two entries for one image."""
    images = doc.data.get("images") if isinstance(doc.data, dict) else None
    if images is None:
        return []
    if not isinstance(images, list):
        return [(doc.line_of(("images",)), "images: expected a list")]
    findings: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(images):
        at = ("images", index)
        if not isinstance(entry, dict):
            findings.append((doc.line_of(at), f"images[{index}]: expected a mapping with name"))
            continue
        for key in entry:
            if key not in IMAGE_KEYS:
                findings.append((doc.line_of((*at, key)),
                                 f"images[{index}]: unknown key '{key}'"
                                 + suggest(str(key), list(IMAGE_KEYS))))
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            findings.append((doc.line_of(at), f"images[{index}]: needs a name"))
        else:
            folded = name.strip().casefold()
            if folded in seen:
                findings.append((doc.line_of((*at, "name")),
                                 f"images: {name} is listed twice (first at line "
                                 f"{seen[folded]}); kustomize would apply only one entry"))
            else:
                seen[folded] = doc.line_of((*at, "name"))
        findings += _tag_and_digest(doc, index, entry)
    return findings


def _tag_and_digest(doc: Document, index: int, entry: dict[str, Any]) -> list[tuple[int, str]]:
    at = ("images", index)
    findings: list[tuple[int, str]] = []
    if "newTag" in entry:
        tag = entry["newTag"]
        if isinstance(tag, (dict, list)) or tag is None:
            findings.append((doc.line_of((*at, "newTag")),
                             f"images[{index}].newTag: expected a tag such as 1.4.2"))
        elif str(tag).startswith("sha256:"):
            findings.append((doc.line_of((*at, "newTag")),
                             f"images[{index}].newTag: holds a digest; a digest goes in "
                             "digest: (newTag: is a tag such as 1.4.2)"))
    if "digest" in entry:
        digest = entry["digest"]
        if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
            findings.append((doc.line_of((*at, "digest")),
                             f"images[{index}].digest: must be sha256: followed by 64 "
                             f"lowercase hex characters, not {str(digest)[:80]!r}"))
    return findings
