"""The tree a merge makes, file by file, from three trees: the branch merged into, the branch
merged, and their merge base (pure).

A file one side left as the merge base had it takes the other side's version (a file added,
changed or removed on one side stays so); a file both sides changed the same way takes that
version. A file both sides changed differently is one git merges line by line (or not at all):
its merged text is not either side's, so it is listed as a conflict and stands as the merged
branch has it. Symbolic links and submodules merge by the same rule, by mode and sha.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.github.snapshot import TreeListing

Entry = tuple[tuple[str, int] | None, str | None]  # (blob sha and size, mode) of one path


@dataclass(frozen=True)
class MergedTree:
    """The merged listing; ``from_head``: the paths whose version is the merged branch's
    (read at its commit, the others at the base's); ``conflicts``: the paths both sides
    changed differently."""

    listing: TreeListing
    from_head: frozenset[str]
    conflicts: frozenset[str]


def merge_trees(base: TreeListing, head: TreeListing, ancestor: TreeListing) -> MergedTree:
    """``head`` merged into ``base``, whose merge base is ``ancestor``."""
    blobs: dict[str, tuple[str, int]] = {}
    modes: dict[str, str] = {}
    from_head: set[str] = set()
    conflicts: set[str] = set()
    paths = {*base.blobs, *base.modes, *head.blobs, *head.modes, *ancestor.blobs,
             *ancestor.modes}
    for path in paths:
        ours, theirs, old = _entry(base, path), _entry(head, path), _entry(ancestor, path)
        if _same(theirs, old) or _same(theirs, ours):
            taken = ours
        else:
            taken = theirs
            from_head.add(path)
            if not _same(ours, old):
                conflicts.add(path)
        blob, mode = taken
        if blob is not None:
            blobs[path] = blob
        if mode is not None:
            modes[path] = mode
    return MergedTree(TreeListing(blobs, modes), frozenset(from_head), frozenset(conflicts))


def _entry(listing: TreeListing, path: str) -> Entry:
    return listing.blobs.get(path), listing.modes.get(path)


def _same(one: Entry, other: Entry) -> bool:
    """The same content: the blob's sha (sizes follow from it) and the mode."""
    return (one[0] or ("", 0))[0] == (other[0] or ("", 0))[0] and one[1] == other[1]
