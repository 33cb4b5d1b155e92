"""The editor's results: where an image occurs, and a verified edit of one file."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageOccurrence:
    line: int  # 1-based line of the value that names the image
    shape: str  # "kustomize" | "helm" | "image-string" | "setter" | "marker"
    name: str  # image name as written in the file
    tag: str | None
    digest: str | None
    inherited_by: tuple[int, ...] = ()  # lines of aliases that reuse this value (anchors)


@dataclass(frozen=True)
class Edit:
    path: str
    old_text: str
    new_text: str
    changed_lines: tuple[int, ...]  # 1-based lines of new_text
    occurrences: tuple[ImageOccurrence, ...]  # what was edited (values before the edit)
    notes: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.new_text != self.old_text

    def unified_diff(self) -> str:
        lines = difflib.unified_diff(
            self.old_text.splitlines(keepends=True),
            self.new_text.splitlines(keepends=True),
            fromfile=f"a/{self.path}",
            tofile=f"b/{self.path}",
        )
        out: list[str] = []
        for line in lines:
            out.append(line)
            if not line.endswith(("\n", "\r")):
                out.append("\n\\ No newline at end of file\n")
        return "".join(out)
