"""A light YAML node tree with exact character offsets, built from parser events.

ruamel's composer resolves an alias to the anchored node and forgets where the alias was
written; building the tree from events keeps every alias as its own node with its position,
which is what the editor needs to report which places inherit an anchored value. The C parser
of ``ruamel.yaml.clib`` is used when installed (it is an order of magnitude faster); the pure
Python parser otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from bot.manifests.errors import YamlSyntaxError

_BREAK_RE = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")


# The C parser of ruamel.yaml.clib (when installed) is fast but implements YAML 1.1, which
# refuses some valid YAML 1.2 (e.g. `[a:b]`); files it refuses are parsed again by the pure
# Python parser, whose verdict stands.
_FAST_LOADER = YAML(typ="safe")
_PURE_LOADER = YAML(typ="safe", pure=True)


class LineIndex:
    """Converts (line, column) marks into offsets into the text, and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        # parsers count columns of the first line after a byte order mark
        first = 1 if text.startswith("\ufeff") else 0
        self.starts = [first] + [m.end() for m in _BREAK_RE.finditer(text)]
        self.pure = False  # set when the pure Python parser read the text

    def offset(self, line: int, column: int) -> int:
        if line >= len(self.starts):
            return len(self.text)
        return self.starts[line] + column

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
    target: Node | None = None


@dataclass(eq=False, slots=True)
class Document:
    root: Node | None
    aliases: list[Alias]


def resolve(node: Node | None) -> Node | None:
    """Follow an alias to its anchored node."""
    if isinstance(node, Alias):
        return node.target
    return node


def contains(outer: Node, inner: Node) -> bool:
    """Whether ``inner`` lies within ``outer`` (or is it)."""
    return outer is inner or (outer.start <= inner.start and inner.end <= outer.end)


def _position(index: LineIndex, mark: Any) -> int:
    return index.offset(mark.line, mark.column)


def parse_documents(
    text: str, path: str, *, pure: bool = False
) -> tuple[list[Document], LineIndex]:
    """Parse every document of ``text``; raise YamlSyntaxError with the line on failure.

    ``index.pure`` tells which parser produced the tree; ``pure=True`` forces the pure Python
    one (verification re-parses an edit with the parser that read the original).
    """
    index = LineIndex(text)
    if not pure and _FAST_LOADER.Parser is not _PURE_LOADER.Parser:
        documents: list[Document] = []
        try:
            _build(_FAST_LOADER.parse(text), index, documents)
            return documents, index
        except YAMLError:
            pass
    documents = []
    index.pure = True
    try:
        _build(_PURE_LOADER.parse(text), index, documents)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # an error at the end of the stream would point past the last line
        line = min(mark.line + 1, len(index.starts)) if mark is not None else 1
        if line > 1 and index.starts[line - 1] >= len(text):
            line -= 1
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(path, line, f"YAML does not parse: {problem}") from exc
    except YAMLError as exc:
        raise YamlSyntaxError(path, 1, f"YAML does not parse: {exc}") from exc
    return documents, index


_PROPERTY_RE = re.compile(r"(?:[&!][^\s]*\s+)+")


def _skip_properties(text: str, start: int) -> int:
    """Offset of a node's content after its ``&anchor`` / ``!tag`` properties."""
    match = _PROPERTY_RE.match(text, start)
    return start if match is None else match.end()


def _tag(event: Any) -> str | None:
    tag = getattr(event, "tag", None)
    return None if tag is None else str(tag)


def _build(events: Any, index: LineIndex, documents: list[Document]) -> None:
    stack: list[Node] = []
    pending_key: list[Node | None] = []
    anchors: dict[str, Node] = {}
    aliases: list[Alias] = []
    root: list[Node | None] = [None]
    flow_depth = 0

    def attach(node: Node) -> None:
        if not stack:
            root[0] = node
            return
        parent = stack[-1]
        if isinstance(parent, Sequence):
            parent.items.append(node)
        elif isinstance(parent, Mapping):
            key = pending_key[-1]
            if key is None:
                pending_key[-1] = node
            else:
                parent.pairs.append((key, node))
                pending_key[-1] = None

    for event in events:
        kind = type(event).__name__
        if kind == "DocumentStartEvent":
            anchors = {}
            aliases = []
            root[0] = None
            continue
        if kind == "DocumentEndEvent":
            documents.append(Document(root=root[0], aliases=aliases))
            continue
        if kind in ("StreamStartEvent", "StreamEndEvent"):
            continue
        start = _position(index, event.start_mark)
        line = event.start_mark.line + 1
        column = event.start_mark.column
        anchor = getattr(event, "anchor", None)
        if kind == "ScalarEvent":
            tag = _tag(event)
            if anchor is not None or tag is not None:
                start = _skip_properties(index.text, start)
            node: Node = Scalar(
                start,
                _position(index, event.end_mark),
                line,
                column,
                anchor,
                tag,
                event.value,
                event.style or None,
                flow_depth > 0,
            )
            attach(node)
        elif kind == "AliasEvent":
            node = Alias(
                start=start,
                end=_position(index, event.end_mark),
                line=line,
                column=column,
                anchor=anchor,
                tag=None,
                target=anchors.get(anchor) if anchor is not None else None,
            )
            aliases.append(node)
            attach(node)
            continue
        elif kind in ("MappingStartEvent", "SequenceStartEvent"):
            content = _skip_properties(index.text, start) if anchor or _tag(event) else start
            flow = index.text.startswith(("{", "["), content)
            if kind == "MappingStartEvent":
                node = Mapping(start, start, line, column, anchor, _tag(event), flow)
            else:
                node = Sequence(start, start, line, column, anchor, _tag(event), flow)
            attach(node)
            stack.append(node)
            pending_key.append(None)
            flow_depth += flow
        else:  # MappingEndEvent / SequenceEndEvent
            closed = stack.pop()
            pending_key.pop()
            assert isinstance(closed, Mapping | Sequence)
            flow_depth -= closed.flow
            closed.end = _position(index, event.end_mark)
            continue
        if anchor is not None:
            anchors[anchor] = node


# -- merge keys (`<<: *base`) -------------------------------------------------------------------

MAX_MERGE_DEPTH = 32  # an anchor merged into itself must not loop
_MERGE_TAG = "tag:yaml.org,2002:merge"


def is_merge_key(node: Node) -> bool:
    """A plain ``<<`` key (or one tagged ``!!merge``): YAML's merge key."""
    return (
        isinstance(node, Scalar)
        and node.value == "<<"
        and node.style is None
        and node.tag in (None, _MERGE_TAG)
    )


def merge_pair(mapping: Mapping) -> tuple[Scalar, Node] | None:
    for key, value in mapping.pairs:
        if is_merge_key(key):
            assert isinstance(key, Scalar)
            return key, value
    return None


def merge_sources(mapping: Mapping) -> list[Mapping]:
    """The mappings merged into ``mapping``, in priority order (earlier ones win)."""
    pair = merge_pair(mapping)
    if pair is None:
        return []
    value = resolve(pair[1])
    items = value.items if isinstance(value, Sequence) else [value]
    return [m for m in (resolve(item) for item in items) if isinstance(m, Mapping)]


@dataclass(frozen=True, slots=True)
class Entry:
    """A key of a mapping as YAML's merge key resolves it: which mapping's own pair it is."""

    key: Scalar
    value: Node
    provider: Mapping


def own_entry(mapping: Mapping, key: str) -> Entry | None:
    for k, v in mapping.pairs:
        if isinstance(k, Scalar) and k.value == key and not is_merge_key(k):
            return Entry(k, v, mapping)
    return None


def effective_entry(mapping: Mapping, key: str, depth: int = 0) -> Entry | None:
    """``mapping[key]`` after merges: its own pair, else the first merged mapping's."""
    found = own_entry(mapping, key)
    if found is not None or depth >= MAX_MERGE_DEPTH:
        return found
    for source in merge_sources(mapping):
        found = effective_entry(source, key, depth + 1)
        if found is not None:
            return found
    return None
