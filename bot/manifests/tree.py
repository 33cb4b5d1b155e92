"""The manifest editor's reading of a file: the node tree of ``bot.yamlread.nodes`` with errors
naming the file, and YAML's ``<<`` merge keys resolved the way the deploy tools resolve them."""

from __future__ import annotations

from dataclasses import dataclass

from bot.manifests.errors import YamlSyntaxError
from bot.yamlread.nodes import (
    Document,
    InvalidYaml,
    LineIndex,
    Mapping,
    Node,
    Scalar,
    Sequence,
    YamlError,
    is_merge_key,
    parse,
    resolve,
)

MAX_MERGE_DEPTH = 32  # an anchor merged into itself must not loop


def parse_documents(
    text: str, path: str, *, pure: bool = False
) -> tuple[list[Document], LineIndex]:
    """Parse every document of ``text``; raise YamlSyntaxError with the line on failure.

    ``index.pure`` tells which parser produced the tree; ``pure=True`` forces the pure Python
    one (verification re-parses an edit with the parser that read the original).
    """
    try:
        stream = parse(text, pure=pure)
    except InvalidYaml as exc:
        starts = LineIndex(text).starts
        # an error at the end of the stream would point past the last line
        line = min(exc.line, len(starts))
        if line > 1 and starts[line - 1] >= len(text):
            line -= 1
        raise YamlSyntaxError(path, line, f"YAML does not parse: {exc.message}") from exc
    except YamlError as exc:
        raise YamlSyntaxError(path, exc.line, exc.message) from exc
    return stream.documents, stream.index


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
