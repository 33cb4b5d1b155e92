"""What a merge makes of three trees, file by file."""

from __future__ import annotations

from bot.github.snapshot import TreeListing
from bot.promotion.merged_tree import merge_trees


def tree(**files: str) -> TreeListing:
    return TreeListing({path.replace("_", "/"): (sha, 1) for path, sha in files.items()}, {})


def test_each_side_keeps_what_only_it_changed() -> None:
    ancestor = tree(a="1", b="1", c="1", d="1")
    base = tree(a="2", b="1", c="1", d="1", e="1")  # a changed, e added
    head = tree(a="1", b="3", d="1", f="1")  # b changed, c removed, f added
    merged = merge_trees(base, head, ancestor)
    assert {p: sha for p, (sha, _) in merged.listing.blobs.items()} == {
        "a": "2", "b": "3", "d": "1", "e": "1", "f": "1"}
    assert merged.from_head == {"b", "c", "f"}
    assert merged.conflicts == frozenset()


def test_a_file_both_sides_changed_differently_is_a_conflict() -> None:
    merged = merge_trees(tree(a="2", b="2"), tree(a="3", b="2"), tree(a="1", b="1"))
    assert merged.conflicts == {"a"}  # b: changed the same way on both sides
    assert merged.listing.blobs["b"] == ("2", 1)


def test_removed_on_one_side_and_changed_on_the_other_is_a_conflict() -> None:
    merged = merge_trees(tree(), tree(a="3"), tree(a="1"))
    assert merged.conflicts == {"a"}


def test_a_file_that_becomes_a_link_on_one_side_keeps_its_mode() -> None:
    ancestor = tree(a="1")
    head = TreeListing({"a": ("9", 1)}, {"a": "120000"})
    merged = merge_trees(tree(a="1"), head, ancestor)
    assert merged.listing.modes == {"a": "120000"}
    assert merged.from_head == {"a"}
