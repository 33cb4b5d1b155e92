"""YAML text → plain documents that remember the line of every key and item.

The config check reports findings on the line that holds them, so every document is composed
once (by libyaml when ruamel.yaml.clib is installed) and turned into dicts, lists and scalars
beside a map from each value's path to its line. Dates and other exotic scalars stay text, as
they would after Kubernetes' own YAML-to-JSON conversion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

Path = tuple[str | int, ...]

MAX_DEPTH = 64
MAX_NODES = 200_000  # after alias expansion: a "billion laughs" file stops here
_MERGE_TAG = "tag:yaml.org,2002:merge"
_CONSTRUCTED = {
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}


@dataclass
class Document:
    """One YAML document: its data, where it starts, and the line of each path in it."""

    data: Any
    line: int
    lines: dict[Path, int] = field(default_factory=dict)

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


class _TooBig(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _Builder:
    def __init__(self, yaml: YAML) -> None:
        self.yaml = yaml
        self.nodes = 0
        self.problems: list[Problem] = []

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag not in _CONSTRUCTED:
            return str(node.value)
        try:
            return self.yaml.constructor.construct_object(node, deep=True)
        except (ValueError, TypeError, OverflowError):
            return str(node.value)

    def build(self, node: Node, path: Path, doc: Document, depth: int) -> Any:
        self.nodes += 1
        line = int(node.start_mark.line) + 1
        if self.nodes > MAX_NODES:
            raise _TooBig(line, f"the file expands to more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise _TooBig(line, f"the document is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            items: list[Any] = []
            for index, item in enumerate(node.value):
                doc.lines.setdefault((*path, index), int(item.start_mark.line) + 1)
                items.append(self.build(item, (*path, index), doc, depth + 1))
            return items
        if isinstance(node, MappingNode):
            return self.mapping(node, path, doc, depth)
        return None

    def mapping(self, node: MappingNode, path: Path, doc: Document, depth: int) -> Any:
        result: dict[Any, Any] = {}
        merged: list[dict[Any, Any]] = []
        for key_node, value_node in node.value:
            key_line = int(key_node.start_mark.line) + 1
            if key_node.tag == _MERGE_TAG:
                source = self.build(value_node, path, doc, depth + 1)
                sources = source if isinstance(source, list) else [source]
                merged.extend(s for s in sources if isinstance(s, dict))
                continue
            key = self.build(key_node, path, doc, depth + 1)
            if isinstance(key, (dict, list)):
                key = str(key)
            if key in result:
                first = doc.lines.get((*path, key), key_line)
                self.problems.append(
                    Problem(key_line, f"duplicate key '{key}' (first defined at line {first})")
                )
                continue
            doc.lines[(*path, key)] = key_line
            result[key] = self.build(value_node, (*path, key), doc, depth + 1)
        for source in merged:  # explicit keys win, then earlier merges
            for key, value in source.items():
                result.setdefault(key, value)
        return result


def parse_documents(text: str) -> Parsed:
    """Every document of ``text`` with line positions, or the problems that stop parsing."""
    yaml = YAML(typ="safe")
    builder = _Builder(yaml)
    documents: list[Document] = []
    try:
        for node in yaml.compose_all(text):
            if node is None:
                continue
            doc = Document(data=None, line=int(node.start_mark.line) + 1)
            doc.data = builder.build(node, (), doc, 0)
            if doc.data is not None:  # an empty document ("---" alone) holds nothing
                documents.append(doc)
    except _TooBig as exc:
        builder.problems.append(Problem(exc.line, exc.message))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else 1
        builder.problems.append(
            Problem(line, f"YAML does not parse: {exc.problem or exc.context}")
        )
    except YAMLError as exc:
        builder.problems.append(Problem(1, f"YAML does not parse: {exc}"))
    return Parsed(documents, builder.problems)
