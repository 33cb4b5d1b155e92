"""Property test: random files built from the recognised shapes, random promotions.

For every generated file and edit: exactly the intended values change (checked against an
independent load of both texts), the result parses, and every other line is byte-identical.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from bot.domain.images import canonical_image_name
from bot.manifests import ImageNotFoundError, promote_image

NAMES = [
    "ghcr.io/acme/web",
    "ghcr.io/Acme/web",
    "ghcr.io/acme/api",
    "nginx",
    "docker.io/library/nginx",
    "localhost:5000/tools/app",
]
TARGETS = [
    "ghcr.io/acme/web",
    "docker.io/library/nginx",
    "localhost:5000/tools/app",
    "ghcr.io/acme/api",
]
TAGS = ["1.4.1", "1.20", "11", "on", "2024-06-27", "v2", "latest", "0755", "1e3", "null"]
STYLES = ["plain", "single", "double"]
KINDS = ["ref", "flow-ref", "helm", "kustomize", "setter", "marker", "anchor", "merge", "other"]
OLD_DIGEST = "sha256:" + "0" * 64
COMMENTS = ["", "", "  # note", " # {not a setter}", "    # keep: me"]

_LOADER = YAML(typ="safe", pure=True)


def quote(value: str, style: str) -> str:
    if style == "single":
        return f"'{value}'"
    if style == "double":
        return f'"{value}"'
    return value


@dataclass
class Record:
    """One image reference the generator wrote, with what a promotion must do to it."""

    kind: str  # "ref" | "tag" (a setter's tag value) | "kustomize" | "helm"
    doc: int
    path: tuple[Any, ...]
    name: str
    tag: str | None  # as written (unquoted text)
    has_digest: bool
    value_lines: list[int]  # absolute 1-based lines whose text may change
    has_tag: bool = True
    alias_paths: list[tuple[Any, ...]] = field(default_factory=list)  # aliases of the value
    merge: Merge | None = None  # a Helm block merged into another: how that one overrides it


@dataclass
class Merge:
    """``key: {<<: *anchor, [tag: ...], [digest: ...]}`` below an anchored Helm block."""

    path: tuple[Any, ...]
    line: int  # the line of `<<: *anchor`
    tag: str | None  # its own tag, as written
    has_digest: bool  # its own digest key


@dataclass
class Generated:
    lines: list[str] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)


@st.composite
def manifest_files(draw: st.DrawFn) -> tuple[str, list[Record]]:
    out = Generated()
    kustomize_written = False
    n_docs = draw(st.integers(1, 3))
    if draw(st.booleans()):
        out.lines.append("# a header comment")
    for doc in range(n_docs):
        if doc > 0 or draw(st.booleans()):
            out.lines.append("---")
        for i in range(draw(st.integers(1, 5))):
            key = f"k{i}"
            kind = draw(st.sampled_from(KINDS))
            if kind == "kustomize" and kustomize_written:
                kind = "other"
            if draw(st.booleans()):
                out.lines.append(draw(st.sampled_from(["", "# between blocks"])))
            if kind == "ref":
                _containers(draw, out, doc, key)
            elif kind == "flow-ref":
                name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
                style = draw(st.sampled_from(["single", "double"]))
                image = quote(f"{name}:{tag}", style)
                out.lines.append(f"{key}: {{containers: [{{name: x, image: {image}}}]}}")
                path = (key, "containers", 0, "image")
                out.records.append(Record("ref", doc, path, name, tag, False, [len(out.lines)]))
            elif kind == "helm":
                _helm(draw, out, doc, key)
            elif kind == "kustomize":
                kustomize_written = True
                _kustomize(draw, out, doc)
            elif kind == "setter":
                _setter(draw, out, doc, key, policy=f"flux-system:p{doc}-{i}")
            elif kind == "anchor":
                name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
                value = quote(f"{name}:{tag}", draw(st.sampled_from(STYLES)))
                out.lines.append(f"x-{key}: &a{i} {value}")
                line = len(out.lines)
                out.lines += [f"{key}:", f"  image: *a{i}", f"  copy: {{image: *a{i}}}"]
                aliases = [(key, "image"), (key, "copy", "image")]
                out.records.append(
                    Record("ref", doc, (f"x-{key}",), name, tag, False, [line], alias_paths=aliases)
                )
            elif kind == "merge":
                _merge(draw, out, doc, key, i)
            elif kind == "marker":
                name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
                marked = draw(st.sampled_from([n for n in NAMES if n.lower() == name.lower()]))
                value = quote(f"{name}:{tag}", draw(st.sampled_from(STYLES)))
                out.lines.append(f"{key}: {value}  # conveyor: {marked}")
                out.records.append(Record("ref", doc, (key,), name, tag, False, [len(out.lines)]))
            else:
                _other(draw, out, key)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(out.lines) + eol, out.records


def _containers(draw: st.DrawFn, out: Generated, doc: int, key: str) -> None:
    flush = draw(st.booleans())
    items = draw(st.integers(1, 3))
    out.lines += [f"{key}:", "  containers:"]
    dash, body = ("  - ", "    ") if flush else ("    - ", "      ")
    for j in range(items):
        name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
        pinned = draw(st.booleans())
        ref = f"{name}:{tag}" + (f"@{OLD_DIGEST}" if pinned else "")
        style = draw(st.sampled_from(STYLES))
        out.lines.append(f"{dash}name: c{j}")
        out.lines.append(f"{body}image: {quote(ref, style)}{draw(st.sampled_from(COMMENTS))}")
        out.records.append(
            Record("ref", doc, (key, "containers", j, "image"), name, tag, pinned, [len(out.lines)])
        )


def _setter(draw: st.DrawFn, out: Generated, doc: int, key: str, policy: str) -> None:
    name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
    if draw(st.booleans()):
        value = quote(f"{name}:{tag}", draw(st.sampled_from(STYLES)))
        out.lines.append(f'{key}: {value} # {{"$imagepolicy": "{policy}"}}')
        out.records.append(Record("ref", doc, (key,), name, tag, False, [len(out.lines)]))
        return
    out.lines.append(f"{key}:")
    out.lines.append(f'  repo: {name} # {{"$imagepolicy": "{policy}:name"}}')
    value = quote(tag, draw(st.sampled_from(STYLES)))
    out.lines.append(f'  version: {value} # {{"$imagepolicy": "{policy}:tag"}}')
    out.records.append(Record("tag", doc, (key, "version"), name, tag, False, [len(out.lines)]))


def _helm(draw: st.DrawFn, out: Generated, doc: int, key: str) -> None:
    name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
    has_digest = draw(st.booleans())
    out.lines += [f"{key}:", "  image:", f"    repository: {name}"]
    out.lines.append(
        f"    tag: {quote(tag, draw(st.sampled_from(STYLES)))}{draw(st.sampled_from(COMMENTS))}"
    )
    lines = [len(out.lines)]
    if has_digest:
        out.lines.append(f"    digest: {OLD_DIGEST}")
        lines.append(len(out.lines))
    out.lines.append("    pullPolicy: IfNotPresent")
    out.records.append(Record("helm", doc, (key, "image"), name, tag, has_digest, lines))


def _merge(draw: st.DrawFn, out: Generated, doc: int, key: str, i: int) -> None:
    name, tag = draw(st.sampled_from(NAMES)), draw(st.sampled_from(TAGS))
    has_digest = draw(st.booleans())
    out.lines += [f"x-{key}: &m{i}", f"  repository: {name}"]
    out.lines.append(f"  tag: {quote(tag, draw(st.sampled_from(STYLES)))}")
    lines = [len(out.lines)]
    if has_digest:
        out.lines.append(f"  digest: {OLD_DIGEST}")
        lines.append(len(out.lines))
    out.lines += [f"{key}:", f"  <<: *m{i}"]
    merge = Merge((key,), len(out.lines), None, False)
    if draw(st.booleans()):
        merge.tag = draw(st.sampled_from(TAGS))
        out.lines.append(f"  tag: {quote(merge.tag, draw(st.sampled_from(STYLES)))}")
        lines.append(len(out.lines))
    if draw(st.booleans()):
        merge.has_digest = True
        out.lines.append(f"  digest: {OLD_DIGEST}{draw(st.sampled_from(COMMENTS))}")
        lines.append(len(out.lines))
    out.lines.append("  pullPolicy: Always")
    out.records.append(
        Record("helm", doc, (f"x-{key}",), name, tag, has_digest, lines, merge=merge)
    )


def _kustomize(draw: st.DrawFn, out: Generated, doc: int) -> None:
    names = draw(
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique_by=canonical_image_name)
    )
    indent = draw(st.sampled_from(["", "  "]))
    out.lines.append("images:")
    for j, name in enumerate(names):
        out.lines.append(f"{indent}- name: {name}{draw(st.sampled_from(COMMENTS))}")
        lines: list[int] = []
        has_tag = draw(st.booleans())
        tag = draw(st.sampled_from(TAGS)) if has_tag else None
        if tag is not None:
            style = draw(st.sampled_from(STYLES))
            comment = draw(st.sampled_from(COMMENTS))
            out.lines.append(f"{indent}  newTag: {quote(tag, style)}{comment}")
            lines.append(len(out.lines))
        has_digest = draw(st.booleans())
        if has_digest:
            out.lines.append(f"{indent}  digest: {OLD_DIGEST}")
            lines.append(len(out.lines))
        out.records.append(
            Record("kustomize", doc, ("images", j), name, tag, has_digest, lines, has_tag)
        )


def _other(draw: st.DrawFn, out: Generated, key: str) -> None:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        out.lines.append(f"{key}: {draw(st.sampled_from(TAGS))}{draw(st.sampled_from(COMMENTS))}")
    elif choice == 1:
        out.lines.append(f"{key}: [1, two, '1.4.1']")
    elif choice == 2:
        out.lines.append(f"{key}: {{a: b, image: 12}}")
    elif choice == 3:
        out.lines += [f"{key}: |", "    run image: ghcr.io/acme/web:1.4.1", "", "    done"]
    elif choice == 4:
        out.lines += [f"{key}:", "  nested:", "    image: 'not an image!'"]
    else:
        out.lines += [f"{key}:", "  tag: 1.4.1", "  repository: https://charts.example.com"]


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _helm_values(block: dict[str, Any], current: str | None, has_digest: bool, tag: str | None,
                 digest: str) -> None:
    """A Helm block's values after a promotion, as YAML reads them (merges resolved)."""
    if has_digest:
        if tag is not None and tag != current:
            block["tag"] = tag
        block["digest"] = digest
    else:
        block["tag"] = f"{tag or current}@{digest}"


def _expected(
    original: list[Any], records: list[Record], tag: str | None, digest: str
) -> list[Any]:
    data = copy.deepcopy(original)
    for r in records:
        if r.merge is not None:  # the block merging this one, with what it ends up reading
            merging = _get(data[r.doc], r.merge.path)
            current = r.merge.tag if r.merge.tag is not None else r.tag
            _helm_values(merging, current, r.has_digest or r.merge.has_digest, tag, digest)
            if _merged_tag_added(r):
                merging["tag"] = tag or current  # a line of its own: the tag's text, a string
        if r.kind == "ref":
            for path in [r.path, *r.alias_paths]:
                parent = _get(data[r.doc], path[:-1])
                parent[path[-1]] = f"{r.name}:{tag or r.tag}@{digest}"
        elif r.kind == "tag":
            parent = _get(data[r.doc], r.path[:-1])
            parent[r.path[-1]] = f"{tag or r.tag}@{digest}"
        elif r.kind == "kustomize":
            entry = _get(data[r.doc], r.path)
            if tag is not None and tag != r.tag:
                entry["newTag"] = tag
            entry["digest"] = digest
        else:
            _helm_values(_get(data[r.doc], r.path), r.tag, r.has_digest, tag, digest)
    return data


def _merged_tag_added(r: Record) -> bool:
    """The merging block sets its own digest but inherits the anchor's tag, which becomes
    tag@digest: it gets a tag of its own."""
    m = r.merge
    return m is not None and m.has_digest and m.tag is None and not r.has_digest


def _inherits_edited(r: Record) -> bool:
    """Whether the merging block still reads a value the promotion edits in the anchor."""
    m = r.merge
    if m is None:
        return False
    inherits_tag = m.tag is None and not _merged_tag_added(r)
    return inherits_tag or (r.has_digest and not m.has_digest)


def _inherits_change(r: Record, tag: str | None, digest: str) -> bool:
    """Whether the merging block still reads a value whose text the promotion changes."""
    m = r.merge
    if m is None:
        return False
    tag_changes = not r.has_digest or (tag is not None and tag != r.tag)
    inherits_tag = m.tag is None and not _merged_tag_added(r)
    inherits_digest = r.has_digest and not m.has_digest
    return (inherits_tag and tag_changes) or (inherits_digest and digest != OLD_DIGEST)


def _inserted_lines(records: list[Record], tag: str | None) -> int:
    count = 0
    for r in records:
        if r.kind == "kustomize":
            count += (not r.has_digest) + (not r.has_tag and tag is not None)
        count += _merged_tag_added(r)
    return count


@settings(max_examples=300, deadline=None)
@given(
    generated=manifest_files(),
    target=st.sampled_from(TARGETS),
    tag=st.one_of(st.none(), st.sampled_from(["1.4.2", "1.20", "on", "2024-06-27", "1.4.1"])),
    digest_hex=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)
def test_promotion_changes_exactly_the_intended_values(
    generated: tuple[str, list[Record]], target: str, tag: str | None, digest_hex: str
) -> None:
    text, records = generated
    digest = f"sha256:{digest_hex}"
    canonical = canonical_image_name(target)
    mine = [r for r in records if canonical_image_name(r.name) == canonical]
    event(f"{len(mine)} occurrence(s) of the image" if len(mine) < 3 else "3+ occurrences")
    if not mine:
        try:
            promote_image(text, image=target, tag=tag, digest=digest)
        except ImageNotFoundError:
            return
        raise AssertionError("a missing image must be an error")

    edit = promote_image(text, image=target, tag=tag, digest=digest, path="f.yaml")

    original = list(_LOADER.load_all(text))
    result = list(_LOADER.load_all(edit.new_text))
    assert result == _expected(original, mine, tag, digest)

    for r in mine:
        if r.alias_paths:
            (occurrence,) = [o for o in edit.occurrences if o.line == r.value_lines[0]]
            assert occurrence.inherited_by == (r.value_lines[0] + 2, r.value_lines[0] + 3)
        if r.merge is not None:
            (anchored,) = [o for o in edit.occurrences if o.line == r.value_lines[0] - 1]
            assert anchored.inherited_by == ((r.merge.line,) if _inherits_edited(r) else ())
    # a note only names aliases that really read a changed value
    noted = any(r.alias_paths or _inherits_change(r, tag, digest) for r in mine)
    assert bool(edit.notes) == noted

    old_lines = text.splitlines(keepends=True)
    new_lines = edit.new_text.splitlines(keepends=True)
    inserted = _inserted_lines(mine, tag)
    assert len(new_lines) == len(old_lines) + inserted
    may_change = {line for r in mine for line in r.value_lines}
    changed = set(edit.changed_lines)
    kept_new = [line for j, line in enumerate(new_lines, 1) if j not in changed]
    pointer = replaced = 0
    for i, line in enumerate(old_lines, 1):
        if pointer < len(kept_new) and kept_new[pointer] == line:
            pointer += 1
        else:
            assert i in may_change, f"line {i} changed but holds no value of {target}"
            replaced += 1
    assert pointer == len(kept_new)
    assert replaced + inserted == len(changed)
