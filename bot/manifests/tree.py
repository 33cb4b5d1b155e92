"""The manifest editor's and the gate's reading of a file: the node tree of ``bot.yamlread.nodes``
with errors naming the file, and YAML's ``<<`` merge keys resolved the way the deploy tools
resolve them (explicit keys win; of several merged mappings, the first): looked up key by key
for the editor (``effective_entry``), and whole mappings for the gate (``MergeResolver``), which
refuses what YAML libraries read differently."""

from __future__ import annotations

from dataclasses import dataclass

from bot.manifests.errors import DuplicateKeyError, ManifestError, YamlSyntaxError
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


@dataclass
class Resolved:
    """A mapping after merge keys: key → (key node, value node)."""

    node: Mapping
    entries: dict[str, tuple[Scalar, Node]]

    def scalar(self, key: str) -> Scalar | None:
        entry = self.entries.get(key)
        value = resolve(entry[1]) if entry else None
        return value if isinstance(value, Scalar) else None

    def get(self, key: str) -> Node | None:
        entry = self.entries.get(key)
        return resolve(entry[1]) if entry else None


class MergeResolver:
    """Every mapping of one file after its merges, each resolved once; raises ManifestError
    (DuplicateKeyError for a key the tools would read differently)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._resolved: dict[int, Resolved] = {}
        self._open: set[int] = set()  # mappings whose merges are being resolved

    def resolve(self, node: Mapping) -> Resolved:
        cached = self._resolved.get(id(node))
        if cached is not None:
            return cached
        self._open.add(id(node))
        explicit: dict[str, tuple[Scalar, Node]] = {}
        merged: dict[str, tuple[Scalar, Node]] = {}
        for key, value in node.pairs:
            if is_merge_key(key):
                for source in self._merge_sources(value, key.line):
                    for name, entry in self.resolve(source).entries.items():
                        if name in explicit:
                            # Go YAML v2 lets a merge override a key written before it, v3
                            # and the YAML merge-key spec do not: ambiguous, so refused.
                            raise DuplicateKeyError(
                                self.path, explicit[name][0].line,
                                f"key {name!r} is set before a << merge that sets it too: "
                                "YAML libraries disagree on which one wins; move it after")
                        merged.setdefault(name, entry)  # the first merged mapping wins
                continue
            key_node = resolve(key)
            if not isinstance(key_node, Scalar):
                continue  # a complex key never names an image field
            if key_node.value in explicit:
                first = explicit[key_node.value][0]
                raise DuplicateKeyError(
                    self.path, key.line,
                    f"duplicate key {key_node.value!r} (first on line {first.line}): Helm and "
                    "Kustomize disagree on which one is deployed; keep one")
            explicit[key_node.value] = (key_node, value)
        self._open.discard(id(node))
        resolved = Resolved(node, {**merged, **explicit})
        self._resolved[id(node)] = resolved
        return resolved

    def _merge_sources(self, value: Node, line: int) -> list[Mapping]:
        target = resolve(value)
        items = target.items if isinstance(target, Sequence) else [value]
        mappings = [source for item in items if isinstance(source := resolve(item), Mapping)]
        if len(mappings) < len(items):
            raise ManifestError(self.path, line, "a << merge key must name a mapping or a list "
                                "of mappings")
        if any(id(source) in self._open for source in mappings):
            raise ManifestError(self.path, line, "a << merge names a mapping that holds the "
                                "merge itself: it would contain itself")
        return mappings
