"""YAML text → a light tree of nodes with exact positions, built from ruamel's parse events.

ruamel's composer resolves an alias to the anchored node and forgets where the alias was
written, and recurses once per nesting level; building the tree from events keeps every alias
as its own node with its position and needs no recursion. Node lines are 1-based and columns
0-based (ruamel's marks); ``start``/``end`` are offsets into the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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

MAX_DEPTH = 64
MAX_NODES = 200_000  # values after alias expansion; a real file never comes near
MERGE_TAG = "tag:yaml.org,2002:merge"

_BREAK_RE = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")
_PROPERTY_RE = re.compile(r"(?:[&!][^\s]*\s+)+")
# Only their parsers are used, which keep no state between texts.
_FAST_LOADER = YAML(typ="safe")
_PURE_LOADER = YAML(typ="safe", pure=True)


class YamlError(Exception):
    """Why a text cannot be read; ``line`` is 1-based, ``column`` 0-based."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


class InvalidYaml(YamlError):
    """The parser refused the text (``message`` is the parser's own words)."""


class NestedTooDeep(YamlError):
    """A collection opens deeper than the reader allows."""


class LineIndex:
    """Converts (line, column) marks into offsets into the text, and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        # parsers count columns of the first line after a byte order mark
        first = 1 if text.startswith("\ufeff") else 0
        self.starts = [first] + [m.end() for m in _BREAK_RE.finditer(text)]
        self.pure = False  # set when the pure Python parser read the text

    def line_end(self, offset: int) -> int:
        """Offset of the line break (or end of text) of the line holding ``offset``."""
        match = _BREAK_RE.search(self.text, offset)
        return len(self.text) if match is None else match.start()

    def line_break_at(self, offset: int) -> str | None:
        match = _BREAK_RE.match(self.text, offset)
        return None if match is None else match.group()


@dataclass(eq=False, slots=True)
class Node:
    start: int
    end: int
    line: int  # 1-based
    column: int  # 0-based
    anchor: str | None
    tag: str | None


@dataclass(eq=False, slots=True)
class Scalar(Node):
    value: str
    style: str | None  # None (plain), "'", '"', "|", ">"
    in_flow: bool  # inside a flow collection, where strict YAML 1.1 parsers refuse ':' in plain


@dataclass(eq=False, slots=True)
class Mapping(Node):
    flow: bool
    pairs: list[tuple[Node, Node]] = field(default_factory=list)

    def get(self, key: str) -> tuple[Scalar, Node] | None:
        for k, v in self.pairs:
            if isinstance(k, Scalar) and k.value == key:
                return k, v
        return None


@dataclass(eq=False, slots=True)
class Sequence(Node):
    flow: bool
    items: list[Node] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Alias(Node):
    """``*name``: ``target`` is the anchored node (None when no anchor precedes it; an
    enclosing collection when the alias refers to itself)."""

    target: Node | None = None


@dataclass(eq=False, slots=True)
class Document:
    root: Node | None
    aliases: list[Alias]
    line: int  # where the document starts, as nodes count
    column: int


@dataclass
class Stream:
    """Every document of a text, and libyaml's refusal when only the pure parser read it."""

    documents: list[Document]
    index: LineIndex
    refused: InvalidYaml | None = None


def resolve(node: Node | None) -> Node | None:
    """Follow an alias to its anchored node (an anchor is never on an alias)."""
    if isinstance(node, Alias):
        return node.target
    return node


def contains(outer: Node, inner: Node) -> bool:
    """Whether ``inner`` lies within ``outer`` (or is it)."""
    return outer is inner or (outer.start <= inner.start and inner.end <= outer.end)


def iter_nodes(root: Node | None) -> Iterator[Node]:
    """Every node under ``root`` (itself included) in text order; aliases are not followed."""
    stack = [] if root is None else [root]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Mapping):
            stack.extend(part for pair in reversed(node.pairs) for part in reversed(pair))
        elif isinstance(node, Sequence):
            stack.extend(reversed(node.items))


def is_merge_key(node: Node) -> bool:
    """YAML's merge key: a plain ``<<``, or any ``<<`` tagged ``!!merge``."""
    return (
        isinstance(node, Scalar)
        and node.value == "<<"
        and ((node.style is None and node.tag is None) or node.tag == MERGE_TAG)
    )


def parse(text: str, *, max_depth: int = MAX_DEPTH, pure: bool = False) -> Stream:
    """Every document of ``text``; raises :class:`YamlError` (see the package docstring for
    which parser decides). ``pure=True`` uses only the pure Python parser (verification
    re-parses an edit with the parser that read the original)."""
    index = LineIndex(text)
    refused = None
    if not pure and _FAST_LOADER.Parser is not _PURE_LOADER.Parser:
        try:
            return Stream(_Walker(index, max_depth).run(_FAST_LOADER.parse(text)), index)
        except YAMLError as exc:
            refused = _invalid(exc)
    index.pure = True
    try:
        return Stream(_Walker(index, max_depth).run(_PURE_LOADER.parse(text)), index, refused)
    except YAMLError as exc:
        raise _invalid(exc) from exc


def _invalid(exc: YAMLError) -> InvalidYaml:
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        if mark is not None:
            return InvalidYaml(int(mark.line) + 1, int(mark.column), problem)
        return InvalidYaml(1, 0, problem)
    return InvalidYaml(1, 0, str(exc))


def _skip_properties(text: str, start: int) -> int:
    """Offset of a node's content after its ``&anchor`` / ``!tag`` properties."""
    match = _PROPERTY_RE.match(text, start)
    return start if match is None else match.end()


class _Walker:
    """Parse events → documents of nodes, with an explicit stack."""

    def __init__(self, index: LineIndex, max_depth: int) -> None:
        self.index = index
        self.starts, self.lines, self.length = index.starts, len(index.starts), len(index.text)
        self.max_depth = max_depth
        self.documents: list[Document] = []
        self.stack: list[Mapping | Sequence] = []
        self.pending_key: list[Node | None] = []
        self.anchors: dict[str, Node] = {}
        self.document = Document(None, [], 1, 0)
        self.flow_depth = 0

    def run(self, events: Any) -> list[Document]:
        handlers = {ScalarEvent: self.scalar, MappingStartEvent: self.open,
                    SequenceStartEvent: self.open, AliasEvent: self.alias,
                    MappingEndEvent: self.close, SequenceEndEvent: self.close,
                    DocumentStartEvent: self.start_document, DocumentEndEvent: self.end_document}
        for event in events:
            handler = handlers.get(type(event))
            if handler is not None:  # not StreamStartEvent / StreamEndEvent
                handler(event)
        return self.documents

    def start_document(self, event: Any) -> None:
        mark = event.start_mark
        self.document = Document(None, [], mark.line + 1, mark.column)
        self.anchors = {}

    def end_document(self, event: Any) -> None:
        self.documents.append(self.document)

    def _offset(self, mark: Any) -> int:
        line = mark.line
        return self.starts[line] + mark.column if line < self.lines else self.length

    def attach(self, node: Node) -> None:
        if not self.stack:
            self.document.root = node
            return
        parent = self.stack[-1]
        if isinstance(parent, Sequence):
            parent.items.append(node)
            return
        key = self.pending_key[-1]
        if key is None:
            self.pending_key[-1] = node
        else:
            parent.pairs.append((key, node))
            self.pending_key[-1] = None

    def scalar(self, event: Any) -> None:
        start = self._offset(event.start_mark)
        anchor, tag = event.anchor, event.tag
        if anchor is not None or tag is not None:
            start = _skip_properties(self.index.text, start)
        node = Scalar(start, self._offset(event.end_mark), event.start_mark.line + 1,
                      event.start_mark.column, anchor, tag, event.value, event.style or None,
                      self.flow_depth > 0)
        self.attach(node)
        if anchor is not None:
            self.anchors[anchor] = node

    def alias(self, event: Any) -> None:
        anchor = event.anchor
        node = Alias(self._offset(event.start_mark), self._offset(event.end_mark),
                     event.start_mark.line + 1, event.start_mark.column, anchor, None,
                     self.anchors.get(anchor) if anchor is not None else None)
        self.document.aliases.append(node)
        self.attach(node)

    def open(self, event: Any) -> None:
        mark = event.start_mark
        if len(self.stack) >= self.max_depth:
            raise NestedTooDeep(mark.line + 1, mark.column,
                                f"the document is nested deeper than {self.max_depth} levels")
        start = self._offset(mark)
        anchor, tag = event.anchor, event.tag
        content = _skip_properties(self.index.text, start) if anchor or tag else start
        flow = self.index.text.startswith(("{", "["), content)
        kind = Mapping if isinstance(event, MappingStartEvent) else Sequence
        node = kind(start, start, mark.line + 1, mark.column, anchor, tag, flow)
        self.attach(node)
        self.stack.append(node)
        self.pending_key.append(None)
        self.flow_depth += flow
        if anchor is not None:
            self.anchors[anchor] = node

    def close(self, event: Any) -> None:
        closed = self.stack.pop()
        self.pending_key.pop()
        self.flow_depth -= closed.flow
        closed.end = self._offset(event.end_mark)
