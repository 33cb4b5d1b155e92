"""Finding image references in a parsed file.

Shapes recognised (see ``docs/manifests.md``):

- ``kustomize``: entries of an ``images:`` sequence (``name``/``newName``/``newTag``/``digest``);
- ``helm``: a mapping with ``repository`` (and optional ``registry``) plus ``tag``/``digest``,
  nested under any key;
- ``image-string``: any ``image:`` key whose value is a string reference;
- ``setter``: values carrying a Flux ``{"$imagepolicy": ...}`` comment;
- ``marker``: values carrying a ``# conveyor: <image> [part]`` comment.

A value that belongs to a structural shape is owned by it; a setter on such a value is redundant
and a marker on it must agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.domain.images import ImageRef, canonical_image_name, is_digest, parse_image_ref
from bot.manifests.comments import Marker, Setter, parse_trailing_comment
from bot.manifests.errors import AmbiguousImageError, UneditableImageError
from bot.manifests.scalars import plain_is_string
from bot.manifests.tree import (
    Alias,
    Document,
    LineIndex,
    Mapping,
    Node,
    Scalar,
    Sequence,
    contains,
    resolve,
)

Pair = tuple[Scalar, Scalar]  # (key, value) of a mapping entry whose value is a scalar


@dataclass(eq=False)
class Found:
    """One image reference with the scalars that hold its parts."""

    shape: str
    name: str  # as written
    match_names: tuple[str, ...]  # canonical names under which it is found
    line: int
    tag: str | None
    digest: str | None
    refs: list[Scalar] = field(default_factory=list)  # whole "name:tag@digest" values
    names: list[Scalar] = field(default_factory=list)
    tags: list[Pair | Scalar] = field(default_factory=list)
    digests: list[Pair | Scalar] = field(default_factory=list)
    mapping: Mapping | None = None  # kustomize / helm block, where keys may be added
    anchor_pair: Pair | None = None  # pair after which new keys go
    tag_key: str = "tag"
    digest_key: str | None = None  # kustomize: always "digest"; helm: "digest" when present

    def scalars(self) -> list[Scalar]:
        out = list(self.refs) + list(self.names)
        out += [p[1] if isinstance(p, tuple) else p for p in (*self.tags, *self.digests)]
        return out


def is_string(node: Scalar) -> bool:
    if node.style is not None:
        return True
    if node.tag is not None:
        return node.tag.endswith(":str")
    return plain_is_string(node.value)


def split_tag(value: str) -> tuple[str | None, str | None]:
    """``1.4.2@sha256:..`` → (tag, digest); an empty tag is None."""
    tag, _, digest = value.partition("@")
    return (tag or None), (digest if is_digest(digest) else None)


def _scalar_value(mapping: Mapping, key: str) -> Pair | None:
    entry = mapping.get(key)
    if entry is None:
        return None
    value = resolve(entry[1])
    return (entry[0], value) if isinstance(value, Scalar) else None


def _reference(node: Scalar) -> ImageRef | None:
    if not node.value or not is_string(node):
        return None
    try:
        return parse_image_ref(node.value)
    except ValueError:
        return None


def _kustomize(entry: Mapping) -> Found | None:
    name = _scalar_value(entry, "name")
    if name is None or not name[1].value:
        return None
    new_name = _scalar_value(entry, "newName")
    new_tag = _scalar_value(entry, "newTag")
    digest = _scalar_value(entry, "digest")
    match_names: list[str] = []
    for pair in (name, new_name):
        if pair is not None:
            try:
                match_names.append(canonical_image_name(pair[1].value))
            except ValueError:
                continue
    if not match_names:
        return None
    effective = new_name if new_name is not None else name
    tag = digest_value = None
    if new_tag is not None:
        tag, digest_value = split_tag(new_tag[1].value)
    if digest is not None and is_digest(digest[1].value):
        digest_value = digest[1].value
    last_name_pair = max((p for p in (name, new_name) if p is not None), key=lambda p: p[0].start)
    return Found(
        shape="kustomize",
        name=effective[1].value,
        match_names=tuple(dict.fromkeys(match_names)),
        line=effective[1].line,
        tag=tag,
        digest=digest_value,
        names=[p[1] for p in (name, new_name) if p is not None],
        tags=[new_tag] if new_tag is not None else [],
        digests=[digest] if digest is not None else [],
        mapping=entry,
        anchor_pair=new_tag if new_tag is not None else last_name_pair,
        tag_key="newTag",
        digest_key="digest",
    )


def _helm(block: Mapping, parent_key: str | None) -> Found | None:
    repository = _scalar_value(block, "repository")
    if repository is None:
        return None
    tag = _scalar_value(block, "tag")
    digest = _scalar_value(block, "digest")
    if tag is None and digest is None and "image" not in (parent_key or "").lower():
        return None
    ref = _reference(repository[1])
    if ref is None or ref.tag is not None or ref.digest is not None:
        return None
    registry = _scalar_value(block, "registry")
    name = ref.name
    if registry is not None and registry[1].value:
        name = f"{registry[1].value.rstrip('/')}/{ref.name}"
    try:
        canonical = canonical_image_name(name)
    except ValueError:
        return None
    tag_value = digest_value = None
    if tag is not None:
        tag_value, digest_value = split_tag(tag[1].value)
    if digest is not None and is_digest(digest[1].value):
        digest_value = digest[1].value
    return Found(
        shape="helm",
        name=name,
        match_names=(canonical,),
        line=repository[1].line,
        tag=tag_value,
        digest=digest_value,
        names=[repository[1]] + ([registry[1]] if registry is not None else []),
        tags=[tag] if tag is not None else [],
        digests=[digest] if digest is not None else [],
        mapping=block,
        anchor_pair=tag if tag is not None else repository,
        tag_key="tag",
        digest_key="digest" if digest is not None else None,
    )


def _image_string(node: Scalar) -> Found | None:
    ref = _reference(node)
    if ref is None:
        return None
    return Found(
        shape="image-string",
        name=ref.name,
        match_names=(ref.canonical_name,),
        line=node.line,
        tag=ref.tag,
        digest=ref.digest,
        refs=[node],
    )


@dataclass
class _Annotated:
    scalar: Scalar
    key: Scalar | None
    note: Setter | Marker


class Locator:
    """Walks the documents once and collects every recognised image reference."""

    def __init__(self, documents: list[Document], index: LineIndex, path: str) -> None:
        self.index = index
        self.path = path
        self.found: list[Found] = []
        self.claimed: dict[int, Found] = {}
        self.seen: set[int] = set()
        self.annotated: list[_Annotated] = []
        self.aliases: list[Alias] = [a for d in documents for a in d.aliases]
        for document in documents:
            if document.root is not None:
                self._walk(document.root)
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
        self._add(_helm(node, key.value if key is not None else None))
        for k, v in node.pairs:
            if not isinstance(k, Scalar):
                continue
            value = resolve(v)
            if k.value == "image" and isinstance(value, Scalar):
                self._add(_image_string(value))
            elif k.value == "images" and isinstance(value, Sequence):
                for item in value.items:
                    entry = resolve(item)
                    if isinstance(entry, Mapping):
                        self._add(_kustomize(entry))

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
            ref = _reference(item.scalar)
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
        tags: list[Pair | Scalar] = []
        digests: list[Pair | Scalar] = []
        name: str | None = None
        tag = digest = None
        owned = [i for i in items if id(i.scalar) in self.claimed]
        for item in owned:
            if item.note.part == "name":
                name = name or item.scalar.value
            elif item.note.part == "ref" and (ref := _reference(item.scalar)) is not None:
                name = name or ref.name
        items = [i for i in items if id(i.scalar) not in self.claimed]
        if not items:
            return None
        for item in sorted(items, key=lambda i: i.scalar.start):
            slot: Pair | Scalar = (item.key, item.scalar) if item.key else item.scalar
            part = item.note.part
            if part == "ref":
                ref = _reference(item.scalar)
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
        first = min((s for s in refs + names), key=lambda s: s.line, default=None)
        line = first.line if first else min(i.scalar.line for i in items)
        return Found(
            shape=shape,
            name=name,
            match_names=(canonical,),
            line=line,
            tag=tag,
            digest=digest,
            refs=refs,
            names=names,
            tags=tags,
            digests=digests,
            digest_key="digest" if digests else None,
        )


def locate(documents: list[Document], index: LineIndex, path: str) -> Locator:
    return Locator(documents, index, path)


def inherited_by(found: Found, aliases: list[Alias]) -> tuple[int, ...]:
    """Lines of aliases whose anchored node contains one of the values of ``found``."""
    scalars = found.scalars()
    lines = {
        alias.line
        for alias in aliases
        if alias.target is not None and any(contains(alias.target, s) for s in scalars)
    }
    return tuple(sorted(lines))
