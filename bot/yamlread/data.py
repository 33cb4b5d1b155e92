"""Positioned nodes → plain dicts, lists and scalars that remember where everything is written.

The policy loader and the config check validate plain data but report every problem on the
line (and column) that holds it. ``DataBuilder`` turns the nodes of ``nodes.parse`` into
``YamlMap``/``YamlSeq`` (a dict and a list that know the position of themselves, of each key,
value and item) and scalars read by ``scalar_value``. An alias shares the anchored value (no
copy), ``<<`` merges are resolved (explicit keys win, then earlier merges), and every
duplicate key is reported, not only the first. Positions are 1-based (line, column).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode

from bot.yamlread.nodes import MAX_NODES, Alias, Mapping, Node, Scalar, Sequence, is_merge_key

Pos = tuple[int, int]  # 1-based line and column

TAG_PREFIX = "tag:yaml.org,2002:"
# First characters of plain scalars that YAML 1.2 may resolve to something other than a
# string: numbers, .inf/.nan, null/~, true/false, and the merge key <<.
_NOT_ALWAYS_STR = frozenset("-+.0123456789~nNtTfF<=")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_WORDS = {word: value for value, spellings in ((None, "null"), (True, "true"), (False, "false"))
          for word in (spellings, spellings.title(), spellings.upper())}
_WORD_STARTS = frozenset("nNtTfF")  # YAML 1.2 reads only those words as null or booleans
_TRUE = frozenset(("true", "yes", "on", "y"))  # the words of an explicit !!bool (YAML 1.1's
_FALSE = frozenset(("false", "no", "off", "n"))  # too: only a tag makes them booleans)
_RESOLVER = YAML(typ="safe").resolver  # YAML 1.2's implicit rules; keeps no state per text


def position(node: Node) -> Pos:
    return node.line, node.column + 1


def construct(tag: str, value: str) -> Any:
    """The value of a scalar resolved to ``tag``. Dates, binary and unknown tags stay text, as
    they do once Kubernetes has turned the YAML into JSON; a value its tag cannot build (a
    ``!!int x``) stays text too."""
    kind = tag.removeprefix(TAG_PREFIX)
    try:
        if kind == "int":
            text = value.replace("_", "")
            sign = -1 if text.startswith("-") else 1
            digits = text.lstrip("+-")
            if digits[:2] in ("0o", "0x", "0b"):
                return sign * int(digits, 0)
            # a leading 0 is octal, as go-yaml (and so Kubernetes tooling) still reads it
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
    if kind == "bool" and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    if kind == "null":
        return None
    return value


def scalar_value(node: Scalar) -> Any:
    """What a scalar means under YAML 1.2's core schema: quoted, block and ``!`` scalars are
    text; a plain one is null, a boolean (only ``true``/``false``), a number or text."""
    tag, value = node.tag, node.value
    if tag is None:
        if node.style is not None:
            return value
        # what the resolver would say, without its cost
        first = value[:1]
        if first and first not in _NOT_ALWAYS_STR:
            return value
        if first in _WORD_STARTS:
            return _WORDS.get(value, value)
        if _DECIMAL.fullmatch(value):
            return int(value)
        tag = _RESOLVER.resolve(ScalarNode, value, (True, False))
    elif tag == "!":
        return value
    return construct(str(tag), value)


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
class Problem:
    pos: Pos
    message: str
    fatal: bool = True  # the data is incomplete and should not be validated further


class _Fatal(Exception):
    def __init__(self, node: Node, message: str) -> None:
        super().__init__(message)
        self.problem = Problem(position(node), message)


class DataBuilder:
    """Nodes → data for one text (its documents share the ``max_nodes`` budget)."""

    def __init__(self, max_nodes: int = MAX_NODES) -> None:
        self.max_nodes = max_nodes
        self.nodes = 0  # values built, aliases counted as the values they stand for
        self.problems: list[Problem] = []
        self._anchored: dict[int, tuple[Any, int]] = {}  # id(node) → value, expanded size
        self._open: set[int] = set()  # collections being built

    @property
    def fatal(self) -> bool:
        return any(problem.fatal for problem in self.problems)

    def build(self, root: Node | None) -> Any:
        """The data of a document's root; None, with a fatal problem, when it cannot be read.

        Recursion follows the node tree only, which the walker bounds to its depth limit.
        """
        if root is None:
            return None
        try:
            return self._value(root)[0]
        except _Fatal as exc:
            self.problems.append(exc.problem)
            return None

    def _count(self, size: int, node: Node) -> None:
        self.nodes += size
        if self.nodes > self.max_nodes:
            raise _Fatal(node, f"the file expands to more than {self.max_nodes} values")

    def _value(self, node: Node) -> tuple[Any, int]:
        if isinstance(node, Alias):
            return self._alias(node)
        value: Any
        if isinstance(node, Mapping):
            value, size = self._mapping(node)
        elif isinstance(node, Sequence):
            value, size = self._sequence(node)
        else:
            assert isinstance(node, Scalar)
            self._count(1, node)
            value, size = scalar_value(node), 1
        if node.anchor is not None:
            self._anchored[id(node)] = (value, size)
        return value, size

    def _alias(self, alias: Alias) -> tuple[Any, int]:
        target = alias.target
        if target is None:
            raise _Fatal(alias, f"alias '*{alias.anchor}' has no anchor before it")
        if id(target) in self._open:
            raise _Fatal(alias, f"alias '*{alias.anchor}' refers to itself")
        value, size = self._anchored[id(target)]
        self._count(size, alias)
        return value, size

    def _sequence(self, node: Sequence) -> tuple[YamlSeq, int]:
        self._count(1, node)
        result, size = YamlSeq(position(node)), 1
        self._open.add(id(node))
        for item in node.items:
            value, item_size = self._value(item)
            result.append(value)
            result.item_pos.append(position(item))
            size += item_size
        self._open.discard(id(node))
        return result, size

    def _mapping(self, node: Mapping) -> tuple[YamlMap, int]:
        self._count(1, node)
        result, size = YamlMap(position(node)), 1
        merges: list[YamlMap] = []
        self._open.add(id(node))
        for key_node, value_node in node.pairs:
            key, key_size = self._value(key_node)
            value, value_size = self._value(value_node)
            size += key_size + value_size
            if is_merge_key(key_node):
                merges += self._merge_sources(value, value_node)
                continue
            if isinstance(key, (YamlMap, YamlSeq)):
                key = ComplexKey(position(key_node))
            if key in result:
                first = result.key_pos[key][0]
                self.problems.append(Problem(
                    position(key_node), f"duplicate key '{key}' (first defined at line {first})",
                    fatal=False))
                continue
            result[key] = value
            result.key_pos[key] = position(key_node)
            result.value_pos[key] = position(value_node)
        for source in merges:  # explicit keys win, then earlier merges
            for key, value in source.items():
                if key not in result:
                    result[key] = value
                    result.key_pos[key] = source.key_pos[key]
                    result.value_pos[key] = source.value_pos[key]
        self._open.discard(id(node))
        return result, size

    def _merge_sources(self, value: Any, node: Node) -> list[YamlMap]:
        found: list[YamlMap] = []
        for source in value if isinstance(value, YamlSeq) else [value]:
            if not isinstance(source, YamlMap):
                self.problems.append(
                    Problem(position(node), "a merge key '<<' needs a mapping", fatal=False))
                break
            found.append(source)
        return found
