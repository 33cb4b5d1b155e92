from __future__ import annotations

import pytest

import bot.manifests.api as api
from bot.manifests import (
    AmbiguousImageError,
    Edit,
    ImageNotFoundError,
    ImageOccurrence,
    ManifestError,
    UneditableImageError,
    ValueSpan,
    VerificationError,
    YamlSyntaxError,
    find_all_images,
    find_images,
    promote_image,
)
from bot.manifests.comments import Marker, Setter, parse_trailing_comment
from bot.manifests.splice import Splice, apply_splices

DIGEST = "sha256:" + "1f" * 32
OLD = "sha256:" + "0" * 64

MIXED = f"""\
images:
  - name: ghcr.io/acme/web
    newTag: 1.4.1
    digest: {OLD}
---
web:
  image:
    registry: ghcr.io
    repository: acme/api
    tag: 2.0.0
spec:
  containers:
    - image: nginx:1.25
  extra: ghcr.io/acme/tool:3 # {{"$imagepolicy": "flux-system:tool"}}
  version: "7" # conveyor: ghcr.io/acme/batch tag
"""


def test_find_all_images_reports_every_shape() -> None:
    assert find_all_images(MIXED) == [
        ImageOccurrence(2, "kustomize", "ghcr.io/acme/web", "1.4.1", OLD, ()),
        ImageOccurrence(9, "helm", "ghcr.io/acme/api", "2.0.0", None, ()),
        ImageOccurrence(13, "image-string", "nginx", "1.25", None, ()),
        ImageOccurrence(14, "setter", "ghcr.io/acme/tool", "3", None, ()),
        ImageOccurrence(15, "marker", "ghcr.io/acme/batch", "7", None, ()),
    ]


def test_find_images_compares_canonically() -> None:
    assert [o.line for o in find_images(MIXED, "docker.io/library/nginx")] == [13]
    assert [o.line for o in find_images(MIXED, "GHCR.io/ACME/api")] == [9]
    assert find_images(MIXED, "ghcr.io/acme/other") == []


def test_find_images_reports_aliases() -> None:
    text = "a: &x ghcr.io/acme/web:1\nb:\n  image: *x\nc: {image: *x}\n"
    (occurrence,) = find_images(text, "ghcr.io/acme/web")
    assert occurrence.line == 1
    assert occurrence.shape == "image-string"
    assert occurrence.inherited_by == (3, 4)


def test_kustomize_placeholder_name_and_new_name_both_match() -> None:
    text = "images:\n- name: web\n  newName: ghcr.io/acme/web\n  newTag: '1'\n"
    assert find_images(text, "web")[0].name == "ghcr.io/acme/web"
    assert find_images(text, "ghcr.io/acme/web")[0].line == 3


def test_block_scalar_content_is_not_an_image() -> None:
    text = "script: |\n  image: ghcr.io/acme/web:1\nimage: ghcr.io/acme/web:1\n"
    assert [o.line for o in find_all_images(text)] == [3]


def test_non_string_image_values_are_ignored() -> None:
    assert find_all_images("image: 12\nother:\n  image: true\n  x: {image: null}\n") == []


def test_edit_fields_and_unified_diff() -> None:
    text = "spec:\n  image: ghcr.io/acme/web:1.4.1\n"
    edit = promote_image(text, image="ghcr.io/acme/web", tag="1.4.2", digest=DIGEST, path="p.yaml")
    assert isinstance(edit, Edit)
    assert edit.changed
    assert edit.path == "p.yaml"
    assert edit.changed_lines == (2,)
    assert edit.occurrences == (
        ImageOccurrence(2, "image-string", "ghcr.io/acme/web", "1.4.1", None, ()),
    )
    assert edit.notes == ()
    assert edit.unified_diff() == (
        "--- a/p.yaml\n+++ b/p.yaml\n@@ -1,2 +1,2 @@\n spec:\n"
        "-  image: ghcr.io/acme/web:1.4.1\n"
        f"+  image: ghcr.io/acme/web:1.4.2@{DIGEST}\n"
    )


def test_already_promoted_is_an_unchanged_edit() -> None:
    text = f"image: ghcr.io/acme/web:1.4.2@{DIGEST}\n"
    edit = promote_image(text, image="ghcr.io/acme/web", tag="1.4.2", digest=DIGEST)
    assert edit.new_text == edit.old_text == text
    assert not edit.changed
    assert edit.unified_diff() == ""
    assert len(edit.occurrences) == 1


def test_changed_lines_count_inserted_lines() -> None:
    text = "x: 1\nimages:\n- name: ghcr.io/acme/web\ny: 2\n"
    edit = promote_image(text, image="ghcr.io/acme/web", tag="2", digest=DIGEST)
    assert edit.changed_lines == (4, 5)
    assert edit.new_text.splitlines()[3:5] == ['  newTag: "2"', f"  digest: {DIGEST}"]


def test_kustomize_digest_only_pin_without_any_tag() -> None:
    text = "images:\n- name: ghcr.io/acme/web\n"
    edit = promote_image(text, image="ghcr.io/acme/web", tag=None, digest=DIGEST)
    assert edit.new_text == f"images:\n- name: ghcr.io/acme/web\n  digest: {DIGEST}\n"


def test_kustomize_never_writes_a_digest_as_new_tag() -> None:
    text = f"images:\n- name: ghcr.io/acme/web\n  newTag: {OLD}\n"
    with pytest.raises(UneditableImageError) as caught:
        promote_image(text, image="ghcr.io/acme/web", tag=None, digest=DIGEST)
    assert caught.value.line == 3
    edit = promote_image(text, image="ghcr.io/acme/web", tag="1.0.0", digest=DIGEST)
    assert "newTag: 1.0.0\n" in edit.new_text
    assert f"  digest: {DIGEST}\n" in edit.new_text


def test_helm_without_tag_needs_a_tag_to_keep() -> None:
    text = "image:\n  repository: ghcr.io/acme/web\n  tag: ''\n"
    with pytest.raises(UneditableImageError, match="no tag to keep"):
        promote_image(text, image="ghcr.io/acme/web", tag=None, digest=DIGEST)


def test_helm_digest_key_without_tag_key_adds_tag() -> None:
    text = f"image:\n  repository: ghcr.io/acme/web\n  digest: {OLD}\n"
    edit = promote_image(text, image="ghcr.io/acme/web", tag="on", digest=DIGEST)
    assert edit.new_text == (
        f'image:\n  repository: ghcr.io/acme/web\n  tag: "on"\n  digest: {DIGEST}\n'
    )


def test_marker_for_name_only_is_not_editable() -> None:
    text = "repo: ghcr.io/acme/web # conveyor: ghcr.io/acme/web name\n"
    assert find_images(text, "ghcr.io/acme/web")[0].shape == "marker"
    with pytest.raises(UneditableImageError, match="name only"):
        promote_image(text, image="ghcr.io/acme/web", tag="1", digest=DIGEST)


def test_marker_on_something_else_than_a_reference() -> None:
    with pytest.raises(UneditableImageError):
        find_all_images("x: 12 # conveyor: ghcr.io/acme/web\n")
    with pytest.raises(AmbiguousImageError):
        find_all_images("x: ghcr.io/acme/api:1 # conveyor: ghcr.io/acme/web\n")
    with pytest.raises(UneditableImageError):
        find_all_images("x: a # conveyor: Not_An//Image tag\n")


def test_setter_tag_without_name_in_file_is_not_recognised() -> None:
    text = 'tag: 1.0 # {"$imagepolicy": "flux-system:web:tag"}\n'
    assert find_all_images(text) == []


def test_errors_carry_path_and_line() -> None:
    with pytest.raises(YamlSyntaxError) as caught:
        find_all_images("a: [\nb: c\n", path="x.yaml")
    assert caught.value.path == "x.yaml"
    assert str(caught.value).startswith("x.yaml:")
    with pytest.raises(ImageNotFoundError) as not_found:
        promote_image("a: b\n", image="ghcr.io/acme/web", tag="1", digest=DIGEST, path="y")
    assert (not_found.value.path, not_found.value.line) == ("y", 1)
    assert isinstance(not_found.value, ManifestError)


def test_bad_arguments_are_value_errors() -> None:
    text = "image: ghcr.io/acme/web:1\n"
    with pytest.raises(ValueError):
        promote_image(text, image="ghcr.io/acme/web", tag="1", digest="sha256:abc")
    with pytest.raises(ValueError):
        promote_image(text, image="ghcr.io/acme/web", tag="bad tag", digest=DIGEST)
    with pytest.raises(ValueError):
        promote_image(text, image="not an image", tag="1", digest=DIGEST)


def test_a_wrong_splice_is_refused_by_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a: keep\nimage: ghcr.io/acme/web:1\n"

    def sloppy(original: str, splices: list[Splice]) -> str:
        return apply_splices(original, splices).replace("keep", "lost")

    monkeypatch.setattr(api, "apply_splices", sloppy)
    with pytest.raises(VerificationError) as caught:
        promote_image(text, image="ghcr.io/acme/web", tag="2", digest=DIGEST)
    assert caught.value.line == 1
    assert "nothing changed" in str(caught.value)


def test_a_splice_that_breaks_the_yaml_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(original: str, splices: list[Splice]) -> str:
        return apply_splices(original, splices) + "x: [\n"

    monkeypatch.setattr(api, "apply_splices", broken)
    with pytest.raises(VerificationError, match="would not parse"):
        promote_image(
            "image: ghcr.io/acme/web:1\n", image="ghcr.io/acme/web", tag="2", digest=DIGEST
        )


def test_apply_splices_rejects_overlaps() -> None:
    assert apply_splices("abcdef", [Splice(4, 4, "Y"), Splice(1, 2, "X")]) == "aXcdYef"
    with pytest.raises(ValueError):
        apply_splices("abcdef", [Splice(1, 3, "X"), Splice(2, 4, "Y")])


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        (' # {"$imagepolicy": "flux-system:web"}', Setter("flux-system:web", "ref")),
        (' #{"$imagepolicy": "ns:web:tag"}', Setter("ns:web", "tag")),
        (' # {"$imagepolicy": "ns:web:digest"}', Setter("ns:web", "digest")),
        (' # {"$imagepolicy": "ns:web:other"}', None),
        (' # {"$imagepolicy": 3}', None),
        (" # {not json", None),
        (" # [1]", None),
        ("  # conveyor: ghcr.io/acme/web", Marker("ghcr.io/acme/web", "ref")),
        ("\t# conveyor: ghcr.io/acme/web digest  ", Marker("ghcr.io/acme/web", "digest")),
        (" # conveyor: ghcr.io/acme/web everything", None),
        (" # just a note", None),
        ("# no space before", None),
        (", b: c", None),
    ],
)
def test_parse_trailing_comment(comment: str, expected: Setter | Marker | None) -> None:
    assert parse_trailing_comment(comment) == expected


def test_large_multi_document_file() -> None:
    document = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app{i}\nspec:\n"
        "  template:\n    spec:\n      containers:\n      - name: app\n"
        "        image: ghcr.io/acme/{name}:1.0.{i}  # pinned by hand\n"
    )
    docs = [document.format(i=i, name="web" if i % 50 == 0 else "api") for i in range(500)]
    text = "---\n".join(docs)
    assert text.count("\n") >= 5000
    edit = promote_image(text, image="ghcr.io/acme/web", tag="2.0.0", digest=DIGEST)
    assert len(edit.occurrences) == 10
    assert len(edit.changed_lines) == 10
    old_lines, new_lines = text.splitlines(), edit.new_text.splitlines()
    differing = [i + 1 for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert tuple(differing) == edit.changed_lines


def test_every_reference_comes_with_the_position_of_each_value() -> None:
    text = "web:\n  image:\n    repository: ghcr.io/acme/web\n    tag: 1.4.1 # pinned\n"
    (occurrence,) = find_all_images(text)
    assert (occurrence.line, occurrence.column) == (3, 16)
    assert occurrence.match_names == ("ghcr.io/acme/web",)
    assert occurrence.spans == (
        ValueSpan("name", 3, 16, text.index("ghcr"), text.index("\n    tag"), "ghcr.io/acme/web"),
        ValueSpan("tag", 4, 9, text.index("1.4.1"), text.index(" # pinned"), "1.4.1"),
    )
    for span in occurrence.spans:
        assert text[span.start : span.end] == span.value


def test_a_merged_value_is_reported_where_it_is_written() -> None:
    text = (
        "base: &img\n  repository: ghcr.io/acme/web\n  tag: 1.0.0\n"
        f"sidecar:\n  <<: *img\n  digest: {OLD}\n"
    )
    anchored, merging = find_all_images(text)
    assert (merging.line, merging.tag, merging.digest) == (6, "1.0.0", OLD)
    assert [(s.part, s.line) for s in merging.spans] == [("name", 2), ("tag", 3), ("digest", 6)]
    assert anchored.inherited_by == (5,)  # the sidecar reuses the tag of line 3
    edit = promote_image(text, image="ghcr.io/acme/web", tag="1.4.2", digest=DIGEST)
    assert edit.new_text.endswith(f"  <<: *img\n  digest: {DIGEST}\n  tag: 1.4.2\n")
    # the sidecar gets its own tag (it must not render 1.4.2@sha256:... beside its digest), so
    # it no longer inherits what changes on line 3
    assert [o.inherited_by for o in edit.occurrences] == [(), ()]
    assert edit.notes == ()
