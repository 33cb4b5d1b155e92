"""The editor's entry points: find an image in a file, promote it to a new tag and digest."""

from __future__ import annotations

from bot.domain.images import canonical_image_name, is_digest, is_tag
from bot.manifests.errors import AmbiguousImageError, ImageNotFoundError
from bot.manifests.locate import Found, Locator, inherited_by, locate
from bot.manifests.model import Edit, ImageOccurrence
from bot.manifests.plan import Planner
from bot.manifests.splice import apply_splices, changed_lines
from bot.manifests.tree import Alias, Node, contains, parse_documents
from bot.manifests.verify import verify


def _occurrence(found: Found, aliases: list[Alias]) -> ImageOccurrence:
    return ImageOccurrence(
        line=found.line,
        shape=found.shape,
        name=found.name,
        tag=found.tag,
        digest=found.digest,
        inherited_by=inherited_by(found, aliases),
    )


def _scan(text: str, path: str) -> Locator:
    documents, index = parse_documents(text, path)
    return locate(documents, index, path)


def find_all_images(text: str, *, path: str = "<file>") -> list[ImageOccurrence]:
    """Every image reference recognised in ``text``, in file order."""
    located = _scan(text, path)
    return [_occurrence(f, located.aliases) for f in located.found]


def find_images(text: str, image: str, *, path: str = "<file>") -> list[ImageOccurrence]:
    """Occurrences of ``image`` (compared canonically) in ``text``, in file order."""
    canonical = canonical_image_name(image)
    located = _scan(text, path)
    return [_occurrence(f, located.aliases) for f in located.found if canonical in f.match_names]


def promote_image(
    text: str, *, image: str, tag: str | None, digest: str, path: str = "<file>"
) -> Edit:
    """Set every occurrence of ``image`` in ``text`` to ``tag`` and ``digest`` (SPEC section 4).

    ``tag=None`` keeps each occurrence's current tag. Raises ManifestError (a subclass) when
    the image is not found, is ambiguous, the file does not parse or the result fails
    verification. When the file already pins exactly that, ``new_text == old_text``.
    """
    if not is_digest(digest):
        raise ValueError(f"invalid digest {digest!r}: expected sha256:<64 lowercase hex>")
    if tag is not None and not is_tag(tag):
        raise ValueError(f"invalid tag {tag!r}")
    canonical = canonical_image_name(image)
    documents, index = parse_documents(text, path)
    located = locate(documents, index, path)
    matches = [f for f in located.found if canonical in f.match_names]
    if not matches:
        raise ImageNotFoundError(path, 1, _not_found_message(image, located.found))
    _check_ambiguity(matches, located, path, image)

    planner = Planner(index, path, tag, digest)
    for found in matches:
        planner.add(found)
    plan = planner.plan
    occurrences = tuple(_occurrence(f, located.aliases) for f in matches)
    notes = _anchor_notes(matches, located.aliases)
    if not plan.splices:
        return Edit(path, text, text, (), occurrences, notes)
    new_text = apply_splices(text, plan.splices)
    _, new_index = verify(documents, index, new_text, plan, path)
    lines = changed_lines(new_index.starts, plan.splices)
    return Edit(path, text, new_text, lines, occurrences, notes)


def _not_found_message(image: str, found: list[Found]) -> str:
    message = (
        f"image {image} not found (looked for Kustomize images entries, Helm image blocks, "
        "image: strings, Flux setters and conveyor markers)"
    )
    names = list(dict.fromkeys(f.name for f in found))
    if names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        message += f"; the file names {shown}"
    return message


def _check_ambiguity(matches: list[Found], located: Locator, path: str, image: str) -> None:
    entries = [f for f in matches if f.shape == "kustomize"]
    if len(entries) > 1:
        raise AmbiguousImageError(
            path,
            entries[1].line,
            f"image {image} has {len(entries)} Kustomize images entries (lines "
            + ", ".join(str(f.line) for f in entries)
            + "); keep one",
        )
    edited = {id(s): f for f in matches for s in f.scalars() if s not in f.names}
    for other in located.found:
        if other in matches:
            continue
        for scalar in other.scalars():
            if id(scalar) in edited and scalar not in other.names:
                raise AmbiguousImageError(
                    path,
                    other.line,
                    f"the value on line {scalar.line} is shared (through an anchor) with "
                    f"{other.name}; promoting {image} would change it too",
                )


def _anchor_notes(matches: list[Found], aliases: list[Alias]) -> tuple[str, ...]:
    """One note per anchor whose node holds an edited value and is reused through aliases."""
    edited = [s for f in matches for s in f.scalars() if s not in f.names]
    users: dict[int, tuple[Node, list[int]]] = {}
    for alias in aliases:
        target = alias.target
        if target is not None and any(contains(target, s) for s in edited):
            users.setdefault(id(target), (target, []))[1].append(alias.line)
    notes: list[str] = []
    for target, lines in sorted(users.values(), key=lambda item: item[0].start):
        used = ", ".join(str(line) for line in sorted(set(lines)))
        notes.append(
            f"the anchor &{target.anchor} on line {target.line} is also used on "
            f"line{'s' if len(set(lines)) > 1 else ''} {used}; the change applies there too"
        )
    return tuple(notes)
