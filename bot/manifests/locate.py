"""Finding image references in a parsed file.

Shapes recognised (see ``docs/manifests.md``): Kustomize entries, image strings and image
volumes, Argo CD ``kustomize.images`` strings (``shapes.py``); Helm values blocks, also ones
that merge others, and Argo CD ``helm.parameters`` (``helm.py``); values carrying a Flux
``{"$imagepolicy": ...}`` setter or a ``# conveyor: <image> [part]`` marker (``comments.py``).

A value that belongs to a structural shape is owned by it; a setter on such a value is redundant
and a marker on it must agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.images import canonical_image_name, is_digest
from bot.manifests.charts import chart_places
from bot.manifests.comments import Marker, Setter, parse_trailing_comment
from bot.manifests.errors import AmbiguousImageError, UneditableImageError
from bot.manifests.found import Found, Slot, reference, split_tag
from bot.manifests.helm import TagKeys, helm_parameters, values_block
from bot.manifests.shapes import argocd_image, image_string, image_volume, kustomize_entry
from bot.manifests.tree import effective_entry, merge_pair
from bot.yamlread.nodes import (
    Alias,
    Document,
    LineIndex,
    Mapping,
    Node,
    Scalar,
    Sequence,
    contains,
    is_merge_key,
    resolve,
)

# id(alias) -> (mapping it is merged into, the merged mapping holding it, its key there or None
# when the alias itself is merged)
MergeLinks = dict[int, tuple[Mapping, Mapping, str | None]]
Added = frozenset[tuple[int, str]]


@dataclass
class _Annotated:
    scalar: Scalar
    key: Scalar | None
    note: Setter | Marker


class Locator:
    """Walks the documents once and collects every recognised image reference."""

    def __init__(
        self, documents: list[Document], index: LineIndex, path: str, tag_keys: TagKeys
    ) -> None:
        self.index = index
        self.path = path
        self.tag_keys = tag_keys
        self.found: list[Found] = []
        self.claimed: dict[int, Found] = {}
        self.seen: set[int] = set()
        self.annotated: list[_Annotated] = []
        self.aliases: list[Alias] = [a for d in documents for a in d.aliases]
        self.merge_links: MergeLinks = {}
        self.merged: set[int] = set()  # ids of mappings merged into others
        self.values_strings: list[Scalar] = []  # Argo CD `helm.values`: YAML inside a string
        for document in documents:
            if document.root is not None:
                self._walk(document.root)
        for place in chart_places(documents):
            self._add(place)
        self._comment_groups()
        self.found.sort(key=lambda f: f.line)

    def _add(self, found: Found | None) -> None:
        if found is None:
            return
        if found.mapping is not None:
            identity = {id(found.mapping)}
        else:
            identity = {id(s) for s in found.scalars() if s not in found.names}
        if identity & self.seen:
            return  # the same anchored value reached again through an alias
        self.seen |= identity
        self.found.append(found)
        for scalar in found.scalars():
            self.claimed[id(scalar)] = found

    def _walk(self, root: Node) -> None:
        # (node, key of the pair holding it); explicit stack: deep files must not hit recursion
        stack: list[tuple[Node, Scalar | None]] = [(root, None)]
        while stack:
            node, key = stack.pop()
            if isinstance(node, Scalar):
                self._comment(node, key)
            elif isinstance(node, Sequence):
                stack.extend((item, None) for item in reversed(node.items))
            elif isinstance(node, Mapping):
                self._mapping(node, key)
                for k, v in reversed(node.pairs):
                    stack.append((v, k if isinstance(k, Scalar) else None))
                    stack.append((k, None))

    def _mapping(self, node: Mapping, key: Scalar | None) -> None:
        parent_key = key.value if key is not None else None
        self._merges(node)
        block = values_block(node, parent_key, self.tag_keys)
        if block is None or block.repeats is None or id(block.repeats) not in self.seen:
            self._add(block)  # a block repeating a found one inherits that one's edit
        for k, v in node.pairs:
            if not isinstance(k, Scalar) or is_merge_key(k):
                continue
            value = resolve(v)
            if k.value == "image" and isinstance(value, Scalar):
                self._add(image_string(value))
            elif k.value == "image" and isinstance(value, Mapping):
                self._add(image_volume(value))
            elif k.value == "images" and isinstance(value, Sequence):
                for item in value.items:
                    entry = resolve(item)
                    if isinstance(entry, Mapping):
                        self._add(kustomize_entry(entry, value))
                    elif isinstance(entry, Scalar) and parent_key == "kustomize":
                        self._add(argocd_image(entry, value))
            elif k.value == "parameters" and isinstance(value, Sequence) and parent_key == "helm":
                for found in helm_parameters(value, self.tag_keys):
                    self._add(found)
            elif k.value == "values" and isinstance(value, Scalar) and parent_key == "helm":
                self.values_strings.append(value)

    def _merges(self, node: Mapping) -> None:
        pair = merge_pair(node)
        if pair is None:
            return
        value = pair[1]
        items = value.items if isinstance(value, Sequence) else [value]
        for item in items:
            source = resolve(item)
            if not isinstance(source, Mapping):
                continue
            self.merged.add(id(source))
            if isinstance(item, Alias):
                self.merge_links[id(item)] = (node, source, None)
                continue
            for k, v in source.pairs:  # an inline mapping merged: `<<: {image: *img}`
                if isinstance(v, Alias) and isinstance(k, Scalar):
                    self.merge_links[id(v)] = (node, source, k.value)

    def inherits(self, alias: Alias, node: Node, added: Added = frozenset()) -> bool:
        """Whether the place of ``alias`` renders ``node``, a value inside its anchor.

        A merged mapping gives only the keys that the mapping merging it does not set itself
        (``added``: keys an edit gives it, as (id(mapping), key)).
        """
        target = alias.target
        if target is None or not contains(target, node):
            return False
        link = self.merge_links.get(id(alias))
        if link is None:
            return True
        merged_into, source, key = link
        if key is None:
            key = next(
                (
                    k.value
                    for k, v in source.pairs
                    if isinstance(k, Scalar) and not is_merge_key(k) and contains(v, node)
                ),
                None,
            )
            if key is None:
                return False  # it comes from the source's own merge: named through that alias
        if (id(merged_into), key) in added:
            return False
        entry = effective_entry(merged_into, key)
        return entry is not None and entry.provider is source

    def inherited_by(
        self, nodes: list[Scalar] | list[Node], added: Added = frozenset()
    ) -> tuple[int, ...]:
        """Lines of aliases whose place renders one of ``nodes``."""
        lines = {
            alias.line
            for alias in self.aliases
            if any(self.inherits(alias, n, added) for n in nodes)
        }
        return tuple(sorted(lines))

    def _comment(self, node: Scalar, key: Scalar | None) -> None:
        text = self.index.text
        end = self.index.line_end(node.end)
        if text.find("#", node.end, end) < 0:
            return
        note = parse_trailing_comment(text[node.end : end])
        if note is not None:
            self.annotated.append(_Annotated(node, key, note))

    def _comment_groups(self) -> None:
        groups: dict[tuple[str, str], list[_Annotated]] = {}
        for item in self.annotated:
            owner = self.claimed.get(id(item.scalar))
            if isinstance(item.note, Marker):
                self._check_marker(item, owner)
                if owner is None:
                    canonical = self._canonical(item.note.image, item.scalar.line)
                    groups.setdefault(("marker", canonical), []).append(item)
            else:
                # a setter on a value owned by a shape is redundant, but its :name still names
                # the policy's image for the setter's other values
                groups.setdefault(("setter", item.note.policy), []).append(item)
        for (shape, _), items in groups.items():
            self._add(self._group(shape, items))

    def _canonical(self, image: str, line: int) -> str:
        try:
            return canonical_image_name(image)
        except ValueError:
            raise UneditableImageError(
                self.path, line, f"conveyor marker names an invalid image {image!r}"
            ) from None

    def _check_marker(self, item: _Annotated, owner: Found | None) -> None:
        assert isinstance(item.note, Marker)
        canonical = self._canonical(item.note.image, item.scalar.line)
        if owner is not None and canonical not in owner.match_names:
            raise AmbiguousImageError(
                self.path,
                item.scalar.line,
                f"conveyor marker names {item.note.image} but the value belongs to "
                f"{owner.name} ({owner.shape})",
            )
        if item.note.part == "ref":
            ref = reference(item.scalar)
            if ref is None:
                raise UneditableImageError(
                    self.path, item.scalar.line, "conveyor marker is not on an image reference"
                )
            if ref.canonical_name != canonical:
                raise AmbiguousImageError(
                    self.path,
                    item.scalar.line,
                    f"conveyor marker names {item.note.image} but the value is {ref.name}",
                )

    def _group(self, shape: str, items: list[_Annotated]) -> Found | None:
        refs: list[Scalar] = []
        names: list[Scalar] = []
        tags: list[Slot] = []
        digests: list[Slot] = []
        name: str | None = None
        tag = digest = None
        owned = [i for i in items if id(i.scalar) in self.claimed]
        for item in owned:
            if item.note.part == "name":
                name = name or item.scalar.value
            elif item.note.part == "ref" and (ref := reference(item.scalar)) is not None:
                name = name or ref.name
        items = [i for i in items if id(i.scalar) not in self.claimed]
        if not items:
            return None
        for item in sorted(items, key=lambda i: i.scalar.start):
            slot: Slot = (item.key, item.scalar) if item.key else item.scalar
            part = item.note.part
            if part == "ref":
                ref = reference(item.scalar)
                if ref is None:
                    continue
                refs.append(item.scalar)
                name, tag, digest = name or ref.name, tag or ref.tag, digest or ref.digest
            elif part == "name":
                names.append(item.scalar)
                name = name or item.scalar.value
            elif part == "tag":
                tags.append(slot)
                t, d = split_tag(item.scalar.value)
                tag, digest = tag or t, digest or d
            else:
                digests.append(slot)
                digest = digest or (item.scalar.value if is_digest(item.scalar.value) else None)
        if isinstance(items[0].note, Marker):
            name = items[0].note.image
        if name is None:
            return None  # a Flux policy whose image name is not in this file
        try:
            canonical = canonical_image_name(name)
        except ValueError:
            return None
        first = min((s for s in refs + names), key=lambda s: s.start, default=None)
        at = first if first else min((i.scalar for i in items), key=lambda s: s.start)
        return Found(
            shape=shape,
            edit="group",
            name=name,
            match_names=(canonical,),
            line=at.line,
            column=at.column,
            tag=tag,
            digest=digest,
            refs=refs,
            names=names,
            tags=tags,
            digests=digests,
            digest_key="digest" if digests else None,
        )


def locate(
    documents: list[Document], index: LineIndex, path: str, tag_keys: TagKeys | None = None
) -> Locator:
    return Locator(documents, index, path, tag_keys or {})
