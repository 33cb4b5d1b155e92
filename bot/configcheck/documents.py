"""YAML text → plain documents that remember the line of every key and item.

The config check reports findings on the line that holds them. Each document is read by
``bot.yamlread`` (its rules for parsing, nesting, aliases and scalars apply; a text libyaml
refuses is refused, as Kubernetes tooling refuses it) into dicts, lists and scalars, beside a
map from each value's path to its line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from bot.yamlread.data import DataBuilder, YamlMap, YamlSeq
from bot.yamlread.nodes import MAX_DEPTH, MAX_NODES, InvalidYaml, YamlError, parse

__all__ = ["MAX_DEPTH", "MAX_NODES", "Document", "Parsed", "Path", "Problem", "parse_documents"]

Path = tuple[str | int, ...]


@dataclass
class Document:
    """One YAML document: its data, where it starts, and the line of each path in it."""

    data: Any
    line: int

    @functools.cached_property
    def lines(self) -> dict[Path, int]:
        """The line of every key and item (most documents never need them)."""
        return _lines(self.data)

    def line_of(self, path: Path) -> int:
        """The line of ``path``, or of its nearest ancestor that has one."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(tuple(path[:end]))
            if found is not None:
                return found
        return self.line


@dataclass(frozen=True)
class Problem:
    line: int
    message: str


@dataclass
class Parsed:
    documents: list[Document]
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


def parse_documents(text: str) -> Parsed:
    """Every document of ``text`` with line positions, or the problems that stop parsing."""
    try:
        stream = parse(text)
        if stream.refused is not None:
            raise stream.refused
    except YamlError as exc:
        prefix = "YAML does not parse: " if isinstance(exc, InvalidYaml) else ""
        return Parsed([], [Problem(exc.line, prefix + exc.message)])
    builder = DataBuilder(MAX_NODES)
    documents = []
    for document in stream.documents:
        data = builder.build(document.root)
        if builder.fatal:
            break
        if data is not None:  # an empty document ("---" alone) holds nothing
            assert document.root is not None
            documents.append(Document(data, document.root.line))
    return Parsed(documents, [Problem(p.pos[0], p.message) for p in builder.problems])


def _lines(data: Any) -> dict[Path, int]:
    """The line of every key and item, each shared (aliased) value entered once, where it is
    first met in the text."""
    lines: dict[Path, int] = {}
    seen: set[int] = set()
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if not isinstance(value, (YamlMap, YamlSeq)) or id(value) in seen:
            continue
        seen.add(id(value))
        children: list[tuple[Path, Any]] = []
        if isinstance(value, YamlMap):
            positions = value.key_pos
            for key, child in value.items():
                at = (*path, key)
                lines[at] = positions[key][0]
                children.append((at, child))
        else:
            for (line, _), (index, child) in zip(value.item_pos, enumerate(value), strict=True):
                at = (*path, index)
                lines[at] = line
                children.append((at, child))
        stack.extend(reversed(children))
    return lines
