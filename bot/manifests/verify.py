"""Checking that an edited text differs from the original in exactly the intended values.

Both texts are parsed into node trees and walked side by side: every node must have the same
kind, anchor, tag, style and value, except the scalars the plan changes (which must hold the new
value and read back as strings) and the keys the plan adds (which must appear right where the
plan put them, with the intended values).
"""

from __future__ import annotations

from bot.manifests.errors import VerificationError, YamlSyntaxError
from bot.manifests.found import is_string
from bot.manifests.plan import Plan
from bot.manifests.tree import parse_documents
from bot.yamlread.nodes import Alias, Document, LineIndex, Mapping, Node, Scalar, Sequence


def verify(
    old_documents: list[Document], old_index: LineIndex, new_text: str, plan: Plan, path: str
) -> tuple[list[Document], LineIndex]:
    try:
        new_documents, index = parse_documents(new_text, path, pure=old_index.pure)
    except YamlSyntaxError as exc:
        raise VerificationError(
            path, exc.line, f"the edited file would not parse ({exc.message}); nothing changed"
        ) from exc
    if len(new_documents) != len(old_documents):
        raise VerificationError(path, 1, "the edit changed the number of YAML documents")
    stack: list[tuple[Node | None, Node | None]] = [
        (old.root, new.root) for old, new in zip(old_documents, new_documents, strict=True)
    ]
    while stack:
        old, new = stack.pop()
        if old is None or new is None:
            if old is not new:
                _fail(path, old or new, "a document became empty or appeared")
            continue
        _compare_node(old, new, plan, path, stack)
    return new_documents, index


def _fail(path: str, node: Node | None, what: str) -> None:
    line = node.line if node is not None else 1
    raise VerificationError(path, line, f"verification failed: {what}; nothing changed")


def _compare_node(
    old: Node,
    new: Node,
    plan: Plan,
    path: str,
    stack: list[tuple[Node | None, Node | None]],
) -> None:
    if type(old) is not type(new) or old.anchor != new.anchor or old.tag != new.tag:
        _fail(path, new, "a node changed its kind, anchor or tag")
    if isinstance(old, Scalar):
        assert isinstance(new, Scalar)
        _compare_scalar(old, new, plan, path)
    elif isinstance(old, Sequence):
        assert isinstance(new, Sequence)
        if len(old.items) != len(new.items) or old.flow != new.flow:
            _fail(path, new, "a sequence changed")
        stack.extend(zip(old.items, new.items, strict=True))
    elif isinstance(old, Mapping):
        assert isinstance(new, Mapping)
        _compare_mapping(old, new, plan, path, stack)
    elif isinstance(old, Alias):
        assert isinstance(new, Alias)


def _compare_scalar(old: Scalar, new: Scalar, plan: Plan, path: str) -> None:
    expected = plan.changes.get(id(old))
    if expected is None:
        if old.value != new.value or old.style != new.style:
            _fail(path, new, f"the value {old.value!r} changed unexpectedly")
        return
    if new.value != expected or not is_string(new):
        _fail(path, new, f"expected the string {expected!r}, found {new.value!r}")


def _compare_mapping(
    old: Mapping,
    new: Mapping,
    plan: Plan,
    path: str,
    stack: list[tuple[Node | None, Node | None]],
) -> None:
    if old.flow != new.flow:
        _fail(path, new, "a mapping changed its style")
    added = plan.insertions.get(id(old), {})
    expected_length = len(old.pairs) + sum(len(keys) for keys in added.values())
    if len(new.pairs) != expected_length:
        _fail(path, new, "a mapping gained or lost keys unexpectedly")
    cursor = 0
    for i, (old_key, old_value) in enumerate(old.pairs):
        new_key, new_value = new.pairs[cursor]
        stack.append((old_key, new_key))
        stack.append((old_value, new_value))
        cursor += 1
        for key, value in added.get(i, []):
            new_key, new_value = new.pairs[cursor]
            cursor += 1
            if not (isinstance(new_key, Scalar) and new_key.value == key):
                _fail(path, new_key, f"the key {key!r} was not added where intended")
            if not (
                isinstance(new_value, Scalar) and new_value.value == value and is_string(new_value)
            ):
                _fail(path, new_value, f"the added {key!r} does not hold {value!r}")
