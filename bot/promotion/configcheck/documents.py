"""YAML text → plain documents that remember the line of every key and item.

The config check reports findings on the line that holds them, so every document is composed
once (by libyaml when ruamel.yaml.clib is installed) and turned into dicts, lists and scalars
beside a map from each value's path to its line. Dates and other exotic scalars stay text, as
they would after Kubernetes' own YAML-to-JSON conversion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.nodes import ScalarNode

Path = tuple[str | int, ...]

MAX_DEPTH = 64
MAX_NODES = 200_000  # after alias expansion: a "billion laughs" file stops here
# First characters of plain scalars that YAML 1.2 may resolve to something other than a
# string: numbers, .inf/.nan, null/~, true/false, and the merge key <<.
_NOT_ALWAYS_STR = frozenset("-+.0123456789~nNtTfF<=")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_TAG = "tag:yaml.org,2002:"
_YAML = YAML(typ="safe")  # only its parser and resolver, which keep no state between files


def construct(tag: str, value: str) -> Any:
    """The value of a resolved scalar; dates, binary and the like stay text, as they do once
    Kubernetes has turned the YAML into JSON."""
    kind = tag.removeprefix(_TAG)
    try:
        if kind == "int":
            text = value.replace("_", "")
            sign = -1 if text.startswith("-") else 1
            digits = text.lstrip("+-")
            if digits[:2] in ("0o", "0x", "0b"):
                return sign * int(digits, 0)
            return sign * int(digits, 8 if len(digits) > 1 and digits[0] == "0" else 10)
        if kind == "float":
            text = value.replace("_", "").lower()
            if text.endswith(".nan"):
                return float("nan")
            if text.endswith(".inf"):
                return float("-inf") if text.startswith("-") else float("inf")
            return float(text)
    except ValueError:
        return value
    if kind == "bool":
        return value.lower() in ("true", "yes", "on", "y")
    if kind == "null":
        return None
    return value


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


@dataclass
class _Frame:
    container: dict[Any, Any] | list[Any]
    path: Path
    anchor: str | None
    line: int
    size: int = 1
    key: Any = None
    key_line: int = 0
    has_key: bool = False
    merges: list[dict[Any, Any]] = field(default_factory=list)


def _line(event: Any) -> int:
    return int(event.start_mark.line) + 1


class _Builder:
    """Parse events → documents, with an explicit stack (deep input cannot exhaust Python's)."""

    def __init__(self, yaml: YAML) -> None:
        self.yaml = yaml
        self.problems: list[Problem] = []
        self.documents: list[Document] = []
        self.doc: Document | None = None
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}  # value, and its size once expanded
        self.nodes = 0

    def scalar(self, event: ScalarEvent) -> Any:
        tag, value = event.tag, event.value
        if tag is None or tag == "!":
            if tag == "!" or not event.implicit[0]:
                return str(value)  # quoted, block or "!": text
            if value and value[0] not in _NOT_ALWAYS_STR:
                return str(value)  # what the resolver would say, without its cost
            if _DECIMAL.fullmatch(value):
                return int(value)
            tag = self.yaml.resolver.resolve(ScalarNode, value, event.implicit)
        return construct(str(tag), str(value))

    def count(self, size: int, line: int) -> None:
        self.nodes += size
        if self.nodes > MAX_NODES:
            raise _TooBig(line, f"the file expands to more than {MAX_NODES} values")

    def add(self, value: Any, line: int, size: int) -> None:
        assert self.doc is not None
        if not self.stack:
            self.doc.data, self.doc.line = value, line
            return
        frame = self.stack[-1]
        frame.size += size
        container = frame.container
        if isinstance(container, list):
            self.doc.lines.setdefault((*frame.path, len(container)), line)
            container.append(value)
            return
        if not frame.has_key:
            key = str(value) if isinstance(value, (dict, list)) else value
            frame.key, frame.key_line, frame.has_key = key, line, True
            return
        frame.has_key = False
        key = frame.key
        if key is _MERGE:
            sources = value if isinstance(value, list) else [value]
            frame.merges.extend(s for s in sources if isinstance(s, dict))
        elif key in container:
            first = self.doc.lines.get((*frame.path, key), frame.key_line)
            self.problems.append(
                Problem(frame.key_line, f"duplicate key '{key}' (first defined at line {first})")
            )
        else:
            self.doc.lines[(*frame.path, key)] = frame.key_line
            container[key] = value

    def start(self, container: dict[Any, Any] | list[Any], event: Any) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise _TooBig(_line(event), f"the document is nested deeper than {MAX_DEPTH} levels")
        path: Path = ()
        if self.stack:
            parent = self.stack[-1]
            if isinstance(parent.container, list):
                path = (*parent.path, len(parent.container))
            else:
                path = (*parent.path, parent.key if parent.has_key else "<key>")
        self.stack.append(_Frame(container, path, event.anchor, _line(event)))
        self.count(1, _line(event))

    def end(self) -> None:
        frame = self.stack.pop()
        if isinstance(frame.container, dict):
            for source in frame.merges:  # explicit keys win, then earlier merges
                for key, value in source.items():
                    frame.container.setdefault(key, value)
        if frame.anchor:
            self.anchors[frame.anchor] = (frame.container, frame.size)
        self.add(frame.container, frame.line, frame.size)

    def feed(self, event: Any) -> None:
        if isinstance(event, DocumentStartEvent):
            self.doc = Document(data=None, line=_line(event))
            self.anchors = {}
        elif isinstance(event, DocumentEndEvent):
            if self.doc is not None and self.doc.data is not None:
                self.documents.append(self.doc)  # an empty document ("---" alone) holds nothing
            self.doc = None
        elif isinstance(event, ScalarEvent):
            value = self.scalar(event)
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self.count(1, _line(event))
            is_merge_key = (
                self.stack and isinstance(self.stack[-1].container, dict)
                and not self.stack[-1].has_key and event.value == "<<"
                and event.tag is None and event.implicit[0]
            )
            self.add(_MERGE if is_merge_key else value, _line(event), 1)
        elif isinstance(event, AliasEvent):
            if event.anchor not in self.anchors:
                raise _TooBig(_line(event), f"alias '*{event.anchor}' has no anchor before it")
            value, size = self.anchors[event.anchor]
            self.count(size, _line(event))
            self.add(value, _line(event), size)
        elif isinstance(event, MappingStartEvent):
            self.start({}, event)
        elif isinstance(event, SequenceStartEvent):
            self.start([], event)
        elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
            self.end()


class _MergeKey:
    def __repr__(self) -> str:
        return "<<"


_MERGE = _MergeKey()


def parse_documents(text: str) -> Parsed:
    """Every document of ``text`` with line positions, or the problems that stop parsing."""
    builder = _Builder(_YAML)
    try:
        for event in _YAML.parse(text):
            builder.feed(event)
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
    return Parsed(builder.documents, builder.problems)
