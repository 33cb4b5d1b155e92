"""The editor's results: where an image occurs, and a verified edit of one file."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ValueSpan:
    """Where one value of an image reference is written in the text."""

    part: str  # "ref" (a whole name:tag@digest) | "name" | "tag" | "digest"
    line: int  # 1-based
    column: int  # 0-based
    start: int  # offsets into the text: text[start:end] is the value as written
    end: int
    value: str  # the value as YAML reads it


@dataclass(frozen=True)
class ImageOccurrence:
    """One image reference: what it names and, in ``spans``, where each of its values is."""

    line: int  # 1-based line of the value that names the image
    shape: str  # see docs/manifests.md: "kustomize", "helm", "image-string", "argocd-image", ...
    name: str  # image name as written in the file (the name it deploys, after any NAME=)
    tag: str | None
    digest: str | None
    inherited_by: tuple[int, ...] = ()  # lines of aliases that reuse the edited values
    column: int = field(default=0, compare=False)  # 0-based column of the value on ``line``
    # the values that name, tag and pin it, in file order; an inherited (merged or aliased)
    # value is where it is written, which may be another block
    spans: tuple[ValueSpan, ...] = field(default=(), compare=False)
    match_names: tuple[str, ...] = field(default=(), compare=False)  # canonical names
    # why a promotion of it would be refused (e.g. a `version:` block without a tag_key)
    refusal: str | None = field(default=None, compare=False)


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
