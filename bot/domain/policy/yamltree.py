"""The policy file's YAML: one document, at most 32 levels deep, only the core schema's tags.

Read by ``bot.yamlread`` (its rules for parsing, aliases and scalars apply) into data that
remembers the position of every key, value and item.
"""

from __future__ import annotations

from typing import Any

from bot.yamlread.data import TAG_PREFIX, DataBuilder, Problem, position, scalar_value
from bot.yamlread.nodes import (
    MERGE_TAG,
    InvalidYaml,
    Mapping,
    Node,
    Scalar,
    YamlError,
    iter_nodes,
    parse,
)

MAX_DEPTH = 32
_SCALAR_TAGS = frozenset(TAG_PREFIX + kind for kind in ("str", "int", "float", "bool", "null"))
_TYPED_TAGS = frozenset(TAG_PREFIX + kind for kind in ("int", "float", "bool"))


def compose(text: str) -> tuple[Any, list[Problem]]:
    """The document as YamlMap/YamlSeq/scalars, and any problems found (with positions)."""
    try:
        stream = parse(text, max_depth=MAX_DEPTH)
        if stream.refused is not None:
            raise stream.refused
    except YamlError as exc:
        message = f"invalid YAML: {exc.message}" if isinstance(exc, InvalidYaml) else exc.message
        return None, [Problem((exc.line, exc.column + 1), message)]
    if not stream.documents:
        return None, []
    root = stream.documents[0].root
    builder = DataBuilder()
    data = builder.build(root)
    problems = [*builder.problems, *_tag_problems(root)]
    if len(stream.documents) > 1:
        second = stream.documents[1]
        problems.append(Problem((second.line, second.column + 1),
                                "the policy file must hold a single YAML document"))
    return data, problems


def _tag_problems(root: Node | None) -> list[Problem]:
    """Tags beyond the core schema's, and typed tags on values they cannot build."""
    problems = []
    for node in iter_nodes(root):
        tag = node.tag
        if tag is None or tag == "!":
            continue
        if isinstance(node, Scalar):
            if tag in _TYPED_TAGS and isinstance(scalar_value(node), str):
                problems.append(Problem(position(node), f"'{node.value}' is not a valid {tag}",
                                        fatal=False))
                continue
            if tag in _SCALAR_TAGS or (tag == MERGE_TAG and node.value == "<<"):
                continue
        elif tag == TAG_PREFIX + ("map" if isinstance(node, Mapping) else "seq"):
            continue
        problems.append(Problem(position(node), f"unsupported tag '{tag}'", fatal=False))
    return problems
