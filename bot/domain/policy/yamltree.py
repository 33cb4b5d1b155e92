"""YAML text → plain dicts and lists that remember where every key, value and item is.

ruamel.yaml's round-trip loader records positions too, but composes in pure Python (about
0.7 s for a 500-service policy on a small machine) and recurses once per nesting level. This
composer consumes ruamel's parse events (from libyaml when ruamel.yaml.clib is installed)
with an explicit stack, so deeply nested input cannot exhaust the Python stack, and it
reports every duplicate key instead of stopping at the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.nodes import ScalarNode

Pos = tuple[int, int]  # 1-based line and column

MAX_DEPTH = 32
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
# First characters of plain scalars that YAML 1.2 may resolve to something other than a
# string: numbers, timestamps, .inf/.nan, null/~, true/false, and the merge key <<.
_NOT_ALWAYS_STR = frozenset("-+.0123456789~nNtTfF<=")


class YamlMap(dict[Any, Any]):
    """A mapping with the position of itself, each key and each value."""

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.key_pos: dict[Any, Pos] = {}
        self.value_pos: dict[Any, Pos] = {}


class YamlSeq(list[Any]):
    """A sequence with the position of itself and of each item."""

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.item_pos: list[Pos] = []


class ComplexKey:
    """Stands in for a mapping key that is itself a mapping or a sequence."""

    def __init__(self, pos: Pos) -> None:
        self.pos = pos

    def __str__(self) -> str:
        return "<complex key>"


@dataclass
class YamlProblem:
    pos: Pos
    message: str
    fatal: bool = True  # the tree is incomplete and should not be validated further


@dataclass
class _Frame:
    container: YamlMap | YamlSeq
    anchor: str | None
    pending_key: Any = None
    pending_key_pos: Pos | None = None
    has_key: bool = False
    merges: list[tuple[YamlMap, Pos]] = field(default_factory=list)


def _pos(event: Any) -> Pos:
    return (int(event.start_mark.line) + 1, int(event.start_mark.column) + 1)


class _Composer:
    def __init__(self, yaml: YAML) -> None:
        self.yaml = yaml
        self.problems: list[YamlProblem] = []
        self.anchors: dict[str, Any] = {}
        self.open_anchors: set[str] = set()
        self.stack: list[_Frame] = []
        self.root: Any = None
        self.documents = 0

    def scalar(self, event: ScalarEvent) -> Any:
        tag = event.tag
        value = event.value
        if tag is None and event.implicit[0] and value and value[0] not in _NOT_ALWAYS_STR:
            return str(value)  # the YAML 1.2 resolver's answer, without its per-call cost
        if tag is None or tag == "!":
            tag = self.yaml.resolver.resolve(ScalarNode, event.value, event.implicit)
        if tag == _STR_TAG:
            return str(event.value)
        if tag == _MERGE_TAG:
            return _MERGE
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return self.yaml.constructor.construct_object(node, deep=True)
        except (ValueError, TypeError, OverflowError):
            # ruamel's resolver calls "-_" or "._" numbers that its constructor then
            # cannot build; such a plain scalar is text.
            if event.tag is not None and event.tag != "!":
                self.problems.append(
                    YamlProblem(_pos(event), f"'{value}' is not a valid {tag}", False)
                )
            return str(value)

    def add(self, value: Any, pos: Pos, *, is_merge_key: bool = False) -> None:
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        container = frame.container
        if isinstance(container, YamlSeq):
            container.append(value)
            container.item_pos.append(pos)
            return
        if not frame.has_key:
            key = value
            if isinstance(value, (YamlMap, YamlSeq)):
                key = ComplexKey(pos)
            frame.pending_key, frame.pending_key_pos, frame.has_key = key, pos, True
            return
        key, key_pos = frame.pending_key, frame.pending_key_pos
        frame.has_key = False
        assert key_pos is not None
        if key is _MERGE:
            self.merge(frame, value, pos)
            return
        if key in container:
            first = container.key_pos[key][0]
            self.problems.append(
                YamlProblem(
                    key_pos, f"duplicate key '{key}' (first defined at line {first})", False
                )
            )
            return
        container[key] = value
        container.key_pos[key] = key_pos
        container.value_pos[key] = pos

    def merge(self, frame: _Frame, value: Any, pos: Pos) -> None:
        sources = value if isinstance(value, YamlSeq) else [value]
        for source in sources:
            if not isinstance(source, YamlMap):
                self.problems.append(YamlProblem(pos, "a merge key '<<' needs a mapping", False))
                return
            frame.merges.append((source, pos))

    def close_map(self, frame: _Frame) -> None:
        container = frame.container
        assert isinstance(container, YamlMap)
        for source, _ in frame.merges:  # explicit keys win, then earlier merges
            for key, value in source.items():
                if key not in container:
                    container[key] = value
                    container.key_pos[key] = source.key_pos[key]
                    container.value_pos[key] = source.value_pos[key]

    def start(self, container: YamlMap | YamlSeq, event: Any) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise _TooDeep(_pos(event))
        if event.anchor:
            self.open_anchors.add(event.anchor)
        self.stack.append(_Frame(container, event.anchor))

    def end(self) -> None:
        frame = self.stack.pop()
        if isinstance(frame.container, YamlMap):
            self.close_map(frame)
        if frame.anchor:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = frame.container
        self.add(frame.container, frame.container.pos)

    def feed(self, event: Any) -> None:
        if isinstance(event, DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self.problems.append(
                    YamlProblem(_pos(event), "the policy file must hold a single YAML document")
                )
                raise _Stop
        elif isinstance(event, ScalarEvent):
            value = self.scalar(event)
            if event.anchor:
                self.anchors[event.anchor] = value
            self.add(value, _pos(event))
        elif isinstance(event, AliasEvent):
            if event.anchor in self.open_anchors:
                self.problems.append(
                    YamlProblem(_pos(event), f"alias '*{event.anchor}' refers to itself")
                )
                raise _Stop
            if event.anchor not in self.anchors:
                self.problems.append(
                    YamlProblem(_pos(event), f"alias '*{event.anchor}' has no anchor before it")
                )
                raise _Stop
            self.add(self.anchors[event.anchor], _pos(event))
        elif isinstance(event, (MappingStartEvent, SequenceStartEvent)):
            expected = _MAP_TAG if isinstance(event, MappingStartEvent) else _SEQ_TAG
            if event.tag not in (None, "!", expected):
                self.problems.append(
                    YamlProblem(_pos(event), f"unsupported tag '{event.tag}'", False)
                )
            kind = YamlMap if isinstance(event, MappingStartEvent) else YamlSeq
            self.start(kind(_pos(event)), event)
        elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
            self.end()


class _MergeKey:
    def __repr__(self) -> str:
        return "<<"


_MERGE = _MergeKey()


class _Stop(Exception):
    pass


class _TooDeep(Exception):
    def __init__(self, pos: Pos) -> None:
        super().__init__(pos)
        self.pos = pos


def _mark_pos(mark: Any) -> Pos:
    return (int(mark.line) + 1, int(mark.column) + 1)


def compose(text: str) -> tuple[Any, list[YamlProblem]]:
    """The document as YamlMap/YamlSeq/scalars, and any problems found (with positions)."""
    yaml = YAML(typ="safe")
    composer = _Composer(yaml)
    try:
        for event in yaml.parse(text):
            composer.feed(event)
    except _Stop:
        pass
    except _TooDeep as exc:
        composer.problems.append(
            YamlProblem(exc.pos, f"the document is nested deeper than {MAX_DEPTH} levels")
        )
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        composer.problems.append(
            YamlProblem(_mark_pos(mark) if mark else (1, 1), f"invalid YAML: {problem}")
        )
    except YAMLError as exc:
        composer.problems.append(YamlProblem((1, 1), f"invalid YAML: {exc}"))
    return composer.root, composer.problems
