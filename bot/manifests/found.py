"""What the locator records for one image reference: the scalars that hold its parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.domain.images import ImageRef, is_digest, parse_image_ref
from bot.manifests.errors import ManifestError
from bot.manifests.scalars import plain_is_string
from bot.yamlread.nodes import Mapping, Node, Scalar, resolve

Pair = tuple[Scalar, Scalar]  # (key, value) of a mapping entry whose value is a scalar
Slot = Pair | Scalar  # a value to edit, with its key when it has one (an empty value needs it)


@dataclass(eq=False)
class Found:
    """One image reference with the scalars that hold its parts.

    ``edit`` says how a promotion rewrites it: ``refs`` (whole references only), ``kustomize``
    (``newTag`` + ``digest``), ``helm`` (a tag value, and a digest value when there is one) or
    ``group`` (setter and marker values, each by its part).
    """

    shape: str
    edit: str
    name: str  # as written
    match_names: tuple[str, ...]  # canonical names under which it is found
    line: int
    column: int
    tag: str | None
    digest: str | None
    refs: list[Scalar] = field(default_factory=list)  # whole "name:tag@digest" values
    names: list[Scalar] = field(default_factory=list)
    tags: list[Slot] = field(default_factory=list)
    digests: list[Slot] = field(default_factory=list)
    mapping: Mapping | None = None  # kustomize / helm block, where keys may be added
    anchor_pair: tuple[Scalar, Node] | None = None  # pair after which new keys go
    tag_key: str = "tag"
    digest_key: str | None = None  # kustomize: always "digest"; helm: "digest" when present
    # a Helm block that merges another (`<<: *base`): (part, pair) of the values it inherits
    inherited: list[tuple[str, Pair]] = field(default_factory=list)
    repeats: Mapping | None = None  # the one block a merging Helm block takes all its keys from
    container: Node | None = None  # the images list holding a Kustomize or Argo CD entry
    prefixed: bool = False  # refs are written "NAME=NEWNAME:TAG" (Argo CD kustomize.images)
    cannot_add: str | None = None  # why a missing tag key cannot be added here
    # (line, message, error class): found, but a promotion of it is refused
    problem: tuple[int, str, type[ManifestError]] | None = None

    def scalars(self) -> list[Scalar]:
        """The scalars of its own block: names and the values a promotion may change."""
        out = list(self.refs) + list(self.names)
        out += [slot_value(s) for s in (*self.tags, *self.digests)]
        return out

    def edited_scalars(self) -> list[Scalar]:
        return [s for s in self.scalars() if s not in self.names]

    def inherited_slot(self, part: str) -> Pair | None:
        return next((pair for p, pair in self.inherited if p == part), None)


def slot_value(slot: Slot) -> Scalar:
    return slot[1] if isinstance(slot, tuple) else slot


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


def scalar_value(mapping: Mapping, key: str) -> Pair | None:
    entry = mapping.get(key)
    if entry is None:
        return None
    value = resolve(entry[1])
    return (entry[0], value) if isinstance(value, Scalar) else None


def reference(node: Scalar) -> ImageRef | None:
    if not node.value or not is_string(node):
        return None
    try:
        return parse_image_ref(node.value)
    except ValueError:
        return None
