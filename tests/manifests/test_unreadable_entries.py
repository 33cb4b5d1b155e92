"""Image entries that name no image (empty, not a string, not a valid reference) are passed
over: the edit finds the one entry that names the promoted image and changes only it."""

from __future__ import annotations

from bot.manifests import promote_image
from bot.sandbox.demo import digest_of

DIGEST = digest_of("web:2.0.0")


def edit(text: str, path: str) -> tuple[str, list[tuple[int, str]]]:
    result = promote_image(text, image="ghcr.io/acme/web", tag="2.0.0", digest=DIGEST,
                           path=path)
    assert result.changed
    return result.new_text, [(o.line, o.shape) for o in result.occurrences]


def test_kustomize_entries_without_a_usable_name_are_left_alone() -> None:
    unreadable = ("images:\n"
                  "  - name: ''\n"
                  "  - newTag: '1.0'\n"
                  "  - name: 'Not An Image!'\n    newTag: x\n"
                  "  - name: 'Not An Image!'\n    newName: 'Nor This!'\n")
    text = unreadable + "  - name: ghcr.io/acme/web\n    newTag: 1.0.0\n"
    new_text, occurrences = edit(text, "kustomization.yaml")
    assert occurrences == [(8, "kustomize")]
    assert new_text == (unreadable + "  - name: ghcr.io/acme/web\n    newTag: 2.0.0\n"
                        f"    digest: {DIGEST}\n")


def test_argocd_image_strings_that_name_no_image_are_left_alone() -> None:
    unreadable = ("spec:\n  source:\n    kustomize:\n      images:\n"
                  "        - ''\n"
                  "        - 42\n"
                  "        - 'Bad Name!=ghcr.io/acme/web:1.0.0'\n"
                  "        - 'ghcr.io/acme/web:@@'\n")
    text = unreadable + "        - ghcr.io/acme/web:1.0.0\n"
    new_text, occurrences = edit(text, "apps/web.yaml")
    assert occurrences == [(9, "argocd-image")]
    assert new_text == unreadable + f"        - ghcr.io/acme/web:2.0.0@{DIGEST}\n"
