"""The editor's entry points: list the image references of a file, promote one image."""

from __future__ import annotations

from collections.abc import Mapping as AbstractMapping

from bot.domain.images import canonical_image_name, is_digest, is_tag
from bot.manifests.errors import AmbiguousImageError, ImageNotFoundError
from bot.manifests.found import Found, slot_value
from bot.manifests.locate import Added, Locator, locate
from bot.manifests.model import Edit, ImageOccurrence, ValueSpan
from bot.manifests.plan import Plan, Planner
from bot.manifests.splice import apply_splices, changed_lines
from bot.manifests.tree import parse_documents
from bot.manifests.verify import verify
from bot.yamlread.nodes import Node, Scalar


def _spans(found: Found) -> tuple[ValueSpan, ...]:
    slots: list[tuple[str, Scalar]] = [("ref", s) for s in found.refs]
    slots += [("name", s) for s in found.names]
    slots += [("tag", slot_value(s)) for s in found.tags]
    slots += [("digest", slot_value(s)) for s in found.digests]
    slots += [(part, pair[1]) for part, pair in found.inherited]
    spans = [ValueSpan(part, s.line, s.column, s.start, s.end, s.value) for part, s in slots]
    return tuple(sorted(spans, key=lambda span: span.start))


def _occurrence(found: Found, located: Locator, added: Added = frozenset()) -> ImageOccurrence:
    return ImageOccurrence(
        line=found.line,
        shape=found.shape,
        name=found.name,
        tag=found.tag,
        digest=found.digest,
        inherited_by=located.inherited_by(found.edited_scalars(), added),
        column=found.column,
        spans=_spans(found),
        match_names=found.match_names,
        refusal=found.problem[1] if found.problem is not None else None,
    )


def _tag_keys(tag_keys: AbstractMapping[str, str] | None) -> dict[str, str]:
    return {canonical_image_name(image): key for image, key in (tag_keys or {}).items()}


def _scan(text: str, path: str, tag_keys: AbstractMapping[str, str] | None) -> Locator:
    documents, index = parse_documents(text, path)
    return locate(documents, index, path, _tag_keys(tag_keys))


def find_all_images(
    text: str, *, path: str = "<file>", tag_keys: AbstractMapping[str, str] | None = None
) -> list[ImageOccurrence]:
    """Every image reference recognised in ``text``, in file order, with the position of each
    of its values (``ImageOccurrence.spans``).

    ``tag_keys`` maps an image name to the key its Helm chart reads the tag from (a service's
    ``tag_key``). Raises ManifestError (a subclass) when the file does not parse or a marker
    contradicts its value.
    """
    located = _scan(text, path, tag_keys)
    return [_occurrence(f, located) for f in located.found]


def find_images(
    text: str, image: str, *, path: str = "<file>", tag_key: str | None = None
) -> list[ImageOccurrence]:
    """Occurrences of ``image`` (compared canonically) in ``text``, in file order."""
    canonical = canonical_image_name(image)
    located = _scan(text, path, {image: tag_key} if tag_key else None)
    return [_occurrence(f, located) for f in located.found if canonical in f.match_names]


def promote_image(
    text: str,
    *,
    image: str,
    tag: str | None,
    digest: str,
    path: str = "<file>",
    tag_key: str | None = None,
) -> Edit:
    """Set every occurrence of ``image`` in ``text`` to ``tag`` and ``digest``.

    ``tag=None`` keeps each occurrence's current tag; ``tag_key`` names the key a Helm chart
    reads the tag from when it is not ``tag``. Raises ManifestError (a subclass) when the image
    is not found, is ambiguous, the file does not parse or the result fails verification. When
    the file already pins exactly that, ``new_text == old_text``.
    """
    if not is_digest(digest):
        raise ValueError(f"invalid digest {digest!r}: expected sha256:<64 lowercase hex>")
    if tag is not None and not is_tag(tag):
        raise ValueError(f"invalid tag {tag!r}")
    canonical = canonical_image_name(image)
    documents, index = parse_documents(text, path)
    located = locate(documents, index, path, {canonical: tag_key} if tag_key else {})
    matches = [f for f in located.found if canonical in f.match_names]
    if not matches:
        inside = _inside_values_string(image, located)
        if inside is not None:
            raise ImageNotFoundError(
                path,
                inside.line,
                f"image {image} is named only inside helm.values, a string Conveyor does not "
                "edit; keep the values in helm.valuesObject (or a values file) instead",
            )
        raise ImageNotFoundError(path, 1, _not_found_message(image, located.found))
    _check_entries(matches, path, image)

    planner = Planner(index, path, tag, digest, located.merged)
    for found in matches:
        planner.add(found)
    plan = planner.finish()
    _check_shared(matches, located, plan, path, image)
    added = plan.added_keys()
    occurrences = tuple(_occurrence(f, located, added) for f in matches)
    notes = _anchor_notes(plan.edited, located, added)
    if not plan.splices:
        return Edit(path, text, text, (), occurrences, notes)
    new_text = apply_splices(text, plan.splices)
    _, new_index = verify(documents, index, new_text, plan, path)
    lines = changed_lines(new_index.starts, plan.splices)
    return Edit(path, text, new_text, lines, occurrences, notes)


def _not_found_message(image: str, found: list[Found]) -> str:
    message = (
        f"image {image} not found (looked for Kustomize images entries, Helm image blocks and "
        "parameters, image: strings and image volumes, Argo CD kustomize.images strings, Flux "
        "setters, conveyor markers and the places of OCI Helm charts)"
    )
    names = list(dict.fromkeys(f.name for f in found))
    if names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        message += f"; the file names {shown}"
    return message


def _inside_values_string(image: str, located: Locator) -> Scalar | None:
    wanted = image.lower()
    return next((s for s in located.values_strings if wanted in s.value.lower()), None)


def _check_entries(matches: list[Found], path: str, image: str) -> None:
    """One entry per image in a Kustomize ``images`` or Argo CD ``kustomize.images`` list."""
    lists: dict[int, list[Found]] = {}
    for found in matches:
        if found.container is not None:
            lists.setdefault(id(found.container), []).append(found)
    for entries in lists.values():
        if len(entries) > 1:
            kind = "Kustomize images" if entries[0].shape == "kustomize" else "kustomize.images"
            raise AmbiguousImageError(
                path,
                entries[1].line,
                f"image {image} has {len(entries)} {kind} entries (lines "
                + ", ".join(str(f.line) for f in entries)
                + "); keep one",
            )


def _check_shared(
    matches: list[Found], located: Locator, plan: Plan, path: str, image: str
) -> None:
    """Refuse an edit of a value that another image's reference renders too."""
    for other in located.found:
        if other in matches:
            continue
        shared = [(s, "shared (through an anchor) with") for s in other.scalars()]
        shared += [(pair[1], "merged (<<) into the block of") for _, pair in other.inherited]
        for scalar, how in shared:
            if id(scalar) in plan.changes:
                raise AmbiguousImageError(
                    path,
                    other.line,
                    f"the value on line {scalar.line} is {how} {other.name}; promoting "
                    f"{image} would change it too",
                )


def _anchor_notes(edited: list[Node], located: Locator, added: Added) -> tuple[str, ...]:
    """One note per anchor holding an edited value that aliases really inherit."""
    users: dict[int, tuple[Node, list[int]]] = {}
    for alias in located.aliases:
        target = alias.target
        if target is not None and any(located.inherits(alias, n, added) for n in edited):
            users.setdefault(id(target), (target, []))[1].append(alias.line)
    notes: list[str] = []
    for target, lines in sorted(users.values(), key=lambda item: item[0].start):
        used = sorted(set(lines))
        notes.append(
            f"the anchor &{target.anchor} on line {target.line} is also used on "
            f"line{'s' if len(used) > 1 else ''} {', '.join(map(str, used))}; "
            "the change applies there too"
        )
    return tuple(notes)
