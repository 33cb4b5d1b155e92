"""Turning a promotion into text splices and the value changes they must cause.

A promotion always pins the digest and keeps the tag beside it: image strings become
``name:tag@digest``; Kustomize entries get ``newTag`` plus ``digest``; Helm blocks get
``digest`` beside ``tag`` when they already have a digest key, otherwise
``tag: <tag>@<digest>``. A Helm block that merges another and inherits a value it needs
different from what the other block gets is given its own key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.domain.images import is_digest, parse_image_ref
from bot.manifests.errors import AmbiguousImageError, UneditableImageError
from bot.manifests.found import Found, Pair, Slot, slot_value, split_tag
from bot.manifests.scalars import render
from bot.manifests.shapes import split_argocd_image
from bot.manifests.splice import Splice
from bot.yamlread.nodes import LineIndex, Mapping, Node, Scalar


@dataclass
class Plan:
    splices: list[Splice] = field(default_factory=list)
    # id(old scalar) -> expected new value
    changes: dict[int, str] = field(default_factory=dict)
    # id(old mapping) -> {index of the pair after which keys are added: [(key, value), ...]}
    insertions: dict[int, dict[int, list[tuple[str, str]]]] = field(default_factory=dict)
    edited: list[Node] = field(default_factory=list)  # changed scalars, mappings given keys

    def added_keys(self) -> frozenset[tuple[int, str]]:
        """(id(mapping), key) of every key the edit adds."""
        return frozenset(
            (mapping, key)
            for mapping, positions in self.insertions.items()
            for keys in positions.values()
            for key, _ in keys
        )


class Planner:
    def __init__(
        self, index: LineIndex, path: str, tag: str | None, digest: str, merged: set[int]
    ) -> None:
        self.index = index
        self.path = path
        self.tag = tag
        self.digest = digest
        self.merged = merged  # ids of mappings merged into others: they must not gain keys
        self.plan = Plan()
        self._done: set[int] = set()
        self._inherited: list[tuple[Found, str, Pair, str]] = []
        self._eol = "\r\n" if "\r\n" in index.text else "\n"

    def add(self, found: Found) -> None:
        if found.problem is not None:
            line, message, error = found.problem
            raise error(self.path, line, message)
        for ref in found.refs:
            self._set_ref(ref, prefixed=found.prefixed)
        if found.edit == "kustomize":
            self._kustomize(found)
        elif found.edit == "helm":
            self._helm(found)
        elif found.edit == "group":
            self._group(found)
        elif found.edit == "chart":
            self._chart(found)

    def finish(self) -> Plan:
        """Give each merging block its own key where what it inherits would be wrong for it."""
        for found, key, pair, value in self._inherited:
            planned = self.plan.changes.get(id(pair[1]), pair[1].value)
            if planned != value:
                self._insert(found, [(key, value)])
        self._inherited = []
        return self.plan

    # -- shapes -------------------------------------------------------------------------------

    def _set_ref(self, scalar: Scalar, *, prefixed: bool) -> None:
        prefix, written = split_argocd_image(scalar.value) if prefixed else ("", scalar.value)
        ref = parse_image_ref(written)
        tag = self.tag if self.tag is not None else ref.tag
        value = prefix + ref.name + (f":{tag}" if tag else "") + f"@{self.digest}"
        self._set(scalar, None, value)

    def _current_tag(self, found: Found, slots: list[Slot]) -> str | None:
        if self.tag is not None:
            return self.tag
        for slot in slots:
            tag, _ = split_tag(slot_value(slot).value)
            if tag is not None:
                if is_digest(tag) or tag.startswith("sha256:"):
                    raise UneditableImageError(
                        self.path,
                        slot_value(slot).line,
                        f"{found.tag_key} holds a digest, not a tag; give the tag to keep",
                    )
                return tag
        return None

    def _kustomize(self, found: Found) -> None:
        tag = self._current_tag(found, found.tags)
        new_keys: list[tuple[str, str]] = []
        for slot in found.tags:
            if tag is not None:
                self._set_slot(slot, tag)
        if not found.tags and tag is not None:
            new_keys.append(("newTag", tag))
        for slot in found.digests:
            self._set_slot(slot, self.digest)
        if not found.digests:
            new_keys.append(("digest", self.digest))
        self._insert(found, new_keys)

    def _helm(self, found: Found) -> None:
        inherited_tag = found.inherited_slot("tag")
        tag = self._current_tag(found, [*found.tags, *filter(None, [inherited_tag])])
        if found.digest_key is not None:
            self._want(found, found.tag_key, found.tags, inherited_tag, tag)
            self._want(found, "digest", found.digests, found.inherited_slot("digest"), self.digest)
            return
        if tag is None:
            raise UneditableImageError(
                self.path, found.line, f"{found.name} has no tag to keep; give the tag"
            )
        self._want(found, found.tag_key, found.tags, inherited_tag, f"{tag}@{self.digest}")

    def _want(
        self, found: Found, key: str, own: list[Slot], inherited: Pair | None, value: str | None
    ) -> None:
        """Make the block's value of ``key`` read ``value``: in its own slots, or by keeping
        what it inherits when that will be right (checked once every edit is planned), or by
        adding the key."""
        if value is None:
            return
        for slot in own:
            self._set_slot(slot, value)
        if own:
            return
        if inherited is not None:
            self._inherited.append((found, key, inherited, value))
        else:
            self._insert(found, [(key, value)])

    def _chart(self, found: Found) -> None:
        """A chart's version, and its digest where the place holds one (Flux OCIRepository)."""
        if self.tag is None:
            raise UneditableImageError(
                self.path, found.line, f"{found.name} is a chart: give the version to write"
            )
        self._want(found, found.tag_key, found.tags, None, self.tag)
        if found.digest_key is not None:
            self._want(found, found.digest_key, found.digests, None, self.digest)

    def _group(self, found: Found) -> None:
        if not (found.refs or found.tags or found.digests):
            raise UneditableImageError(
                self.path, found.line, f"{found.name} is marked by name only; mark its tag too"
            )
        # each tag value keeps its own current tag when no new tag is given
        for slot in found.tags:
            tag = self._current_tag(found, [slot])
            if found.digests:
                if tag is not None:
                    self._set_slot(slot, tag)
            elif tag is None:
                line = slot_value(slot).line
                raise UneditableImageError(
                    self.path, line, f"{found.name} has no tag to keep; give the tag"
                )
            else:
                self._set_slot(slot, f"{tag}@{self.digest}")
        for slot in found.digests:
            self._set_slot(slot, self.digest)

    # -- primitives ---------------------------------------------------------------------------

    def _set_slot(self, slot: Slot, value: str) -> None:
        if isinstance(slot, tuple):
            self._set(slot[1], slot[0], value)
        else:
            self._set(slot, None, value)

    def _set(self, scalar: Scalar, key: Scalar | None, value: str) -> None:
        if id(scalar) in self._done:
            return
        self._done.add(id(scalar))
        if scalar.value == value:
            return
        if scalar.style in ("|", ">"):
            raise UneditableImageError(
                self.path, scalar.line, "the value is a block scalar; write it on one line"
            )
        if scalar.start == scalar.end:
            # an empty value (`digest:`): write after the key's colon
            if key is None:
                raise UneditableImageError(self.path, scalar.line, "empty value without a key")
            colon = self.index.text.index(":", key.end)
            text = " " + render(value, None)
            self.plan.splices.append(Splice(colon + 1, colon + 1, text))
        else:
            explicit_str = scalar.tag is not None and scalar.tag.endswith(":str")
            text = render(value, scalar.style, explicit_str=explicit_str, in_flow=scalar.in_flow)
            self.plan.splices.append(Splice(scalar.start, scalar.end, text))
        self.plan.changes[id(scalar)] = value
        self.plan.edited.append(scalar)

    def _insert(self, found: Found, keys: list[tuple[str, str]]) -> None:
        if not keys:
            return
        mapping, after = found.mapping, found.anchor_pair
        if mapping is None or after is None:
            raise UneditableImageError(
                self.path, found.line, f"{found.name} has no {keys[0][0]}: {found.cannot_add}"
            )
        if id(mapping) in self.merged:
            raise AmbiguousImageError(
                self.path,
                mapping.line,
                f"the block of {found.name} would need its own {keys[0][0]}, but other blocks "
                "merge it (<<) and would inherit that too; give them their own keys",
            )
        position = _pair_index(mapping, after)
        value_node = mapping.pairs[position][1]
        if mapping.flow:
            at = value_node.end
            text = "".join(f", {k}: {render(v, None, in_flow=True)}" for k, v in keys)
        else:
            if after[0].line != value_node.line and value_node.end > value_node.start:
                raise UneditableImageError(
                    self.path, after[0].line, f"cannot add keys after a multi-line {after[0].value}"
                )
            last = value_node.end - 1 if value_node.end > value_node.start else after[0].end
            at = self.index.line_end(last)
            eol = self.index.line_break_at(at) or self._eol
            indent = " " * after[0].column
            text = "".join(f"{eol}{indent}{k}: {render(v, None)}" for k, v in keys)
        self.plan.splices.append(Splice(at, at, text))
        self.plan.insertions.setdefault(id(mapping), {}).setdefault(position, []).extend(keys)
        self.plan.edited.append(mapping)


def _pair_index(mapping: Mapping, pair: tuple[Scalar, Node]) -> int:
    for i, (k, _) in enumerate(mapping.pairs):
        if k is pair[0]:
            return i
    raise ValueError("pair not in mapping")
