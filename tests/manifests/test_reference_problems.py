"""References the deploy-time reader cannot judge: each is kept, with the line it is on and a
one-line problem the gate shows, instead of being skipped."""

from __future__ import annotations

import pytest

from bot.manifests import ManifestError
from bot.manifests.references import deploy_references

A = "sha256:" + "a" * 64
Row = tuple[int, str, str, str | None, str | None, str | None, str | None]


def rows(text: str) -> list[Row]:
    return [(r.line, r.shape, r.name, r.tag, r.digest, r.replaces, r.problem)
            for r in deploy_references(text)]


def pod(image: str) -> str:
    return f"kind: Pod\nspec:\n  containers:\n    - name: app\n      image: {image}\n"


def test_a_name_with_non_ascii_characters_says_which() -> None:
    assert rows(pod("ghcr.io/acme/wéb:1")) == [
        (5, "image", "ghcr.io/acme/wéb:1", None, None, None,
         "'ghcr.io/acme/wéb:1' is not a valid image reference: it contains non-ASCII "
         "characters 'é' (U+00E9)")]
    [found] = deploy_references(pod("ghcr.io/acme/wéb:1"))
    # a name that does not parse compares as written
    assert found.canonical_name == "ghcr.io/acme/wéb:1"


def test_a_null_image_is_no_reference() -> None:
    assert rows(pod("~")) == []


def test_kustomize_entries_that_cannot_run() -> None:
    text = ("images:\n  - name: ghcr.io/acme/web\n    newName: 'not an image!'\n    newTag: '1'\n"
            "  - name: ghcr.io/acme/api\n    newTag: '2'\n    digest: sha256:abc\n")
    assert rows(text) == [
        (3, "kustomize", "not an image!", "1", None, "ghcr.io/acme/web",
         "'not an image!' is not a valid image reference: invalid image name component "
         "'not an image!' in 'not an image!'"),
        (5, "kustomize", "ghcr.io/acme/api", "2", "sha256:abc", "ghcr.io/acme/api",
         "digest 'sha256:abc' is not sha256: and 64 lower-case hex digits"),
    ]
    bad = deploy_references(text)[0]
    assert bad.identity == ("not an image!", "1", None, "ghcr.io/acme/web")


def test_an_argocd_image_override_that_does_not_parse() -> None:
    text = ("kind: Application\nspec:\n  source:\n    kustomize:\n      images:\n"
            "        - 'ghcr.io/acme/web=bad name:1'\n")
    assert rows(text) == [
        (6, "kustomize", "bad name:1", None, None, "ghcr.io/acme/web",
         "'ghcr.io/acme/web=bad name:1' is not a valid image reference: invalid image name "
         "component 'bad name' in 'bad name'")]


def test_helm_blocks_and_parameters_that_do_not_parse() -> None:
    assert rows("image:\n  repository: 'Bad Repo'\n  tag: '1'\n") == [
        (2, "helm", "Bad Repo", "1", None, None,
         "'Bad Repo' is not a valid image reference: invalid image name component 'Bad Repo' "
         "in 'Bad Repo'")]
    text = ("kind: Application\nspec:\n  source:\n    helm:\n      parameters:\n"
            "        - {name: image.registry, value: ghcr.io}\n"
            "        - {name: image.repository, value: acme/web}\n"
            f"        - {{name: image.tag, value: '1.2@{A}'}}\n"
            "        - {name: sidecar.image, value: 'busybox:1'}\n"
            "        - {name: x.repository, value: 'bad repo'}\n"
            "        - {name: x.tag, value: '1'}\n"
            "        - not a mapping\n"
            "        - {name: y.repository}\n")
    assert rows(text) == [
        (7, "helm-parameters", "ghcr.io/acme/web", "1.2", A, None, None),
        (9, "helm-parameters", "busybox", "1", None, None, None),
        (10, "helm-parameters", "bad repo", "1", None, None,
         "'bad repo' is not a valid image reference: invalid image name component 'bad repo' "
         "in 'bad repo'"),
    ]


def test_inline_values_that_do_not_parse_name_the_string() -> None:
    text = ("kind: Application\nspec:\n  source:\n    helm:\n      values: |\n"
            "        image: [\n")
    with pytest.raises(ManifestError) as refused:
        deploy_references(text, path="apps/web.yaml")
    assert str(refused.value) == ("apps/web.yaml:5: the helm.values string: YAML does not "
                                  "parse: expected the node content, but found '<stream end>'")
