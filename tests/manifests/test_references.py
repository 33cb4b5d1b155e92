"""The deploy-time reader: every image a file deploys, as Helm and Kustomize read it."""

from __future__ import annotations

import pytest

from bot.manifests import ManifestError
from bot.manifests.references import DuplicateKeyError, deploy_references

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


def refs(text: str) -> list[tuple[str, str | None, str | None]]:
    return [(r.name, r.tag, r.digest) for r in deploy_references(text)]


def test_every_container_kind_in_every_document() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: app\n"
        f"      image: ghcr.io/acme/web:1.0@{A}\n"
        "    - name: proxy\n      image: envoyproxy/envoy:v1\n"
        "  initContainers:\n    - {name: init, image: busybox}\n"
        "  ephemeralContainers:\n    - name: debug\n      image: ghcr.io/acme/debug:2\n"
        "---\nkind: Pod\nspec:\n  volumes:\n    - name: data\n"
        f"      image:\n        reference: ghcr.io/acme/data@{B}\n"
    )
    assert refs(text) == [
        ("ghcr.io/acme/web", "1.0", A),
        ("envoyproxy/envoy", "v1", None),
        ("busybox", None, None),
        ("ghcr.io/acme/debug", "2", None),
        ("ghcr.io/acme/data", None, B),
    ]


def test_kustomize_entries_report_the_name_that_runs() -> None:
    text = (
        "images:\n  - name: ghcr.io/acme/web\n    newName: ghcr.io/other/web\n"
        f"    newTag: '1.4.2'\n    digest: {A}\n  - name: nginx\n    newTag: latest\n"
    )
    found = deploy_references(text)
    assert [(r.name, r.tag, r.digest, r.replaces) for r in found] == [
        ("ghcr.io/other/web", "1.4.2", A, "ghcr.io/acme/web"),
        ("nginx", "latest", None, "nginx"),
    ]
    renamed = deploy_references(text.replace("ghcr.io/other/web", "ghcr.io/acme/web"))[0]
    assert renamed.identity != found[0].identity  # a name swap is a change


def test_argocd_strings_and_helm_parameters() -> None:
    text = (
        "spec:\n  source:\n    kustomize:\n      images:\n"
        f"        - ghcr.io/acme/web=ghcr.io/acme/web-debug:1.0@{A}\n"
        "    helm:\n      parameters:\n"
        "        - {name: image.repository, value: ghcr.io/acme/api}\n"
        f"        - {{name: image.tag, value: '2.0@{B}'}}\n"
        "      values: |\n        sidecar:\n          image: docker.io/evil/x:latest\n"
    )
    assert refs(text) == [
        ("ghcr.io/acme/web-debug", "1.0", A),
        ("ghcr.io/acme/api", "2.0", B),
        ("docker.io/evil/x", "latest", None),
    ]


def test_helm_blocks_nested_with_registry_and_a_tag_carrying_the_digest() -> None:
    text = (
        "web:\n  image:\n    registry: ghcr.io\n    repository: acme/web\n"
        f"    tag: 1.4.2@{A}\n  chart:\n    repository: https://charts.example.com\n"
    )
    assert refs(text) == [("ghcr.io/acme/web", "1.4.2", A)]


def test_a_tag_without_its_repository_cannot_be_judged() -> None:
    (found,) = deploy_references("image:\n  tag: 1.5.0\n")
    assert found.problem is not None and "chart's defaults" in found.problem


def test_merge_keys_are_resolved_and_explicit_keys_win() -> None:
    text = (
        f"base: &base\n  repository: ghcr.io/acme/api\n  tag: '1.0'\n  digest: {A}\n"
        f"image:\n  <<: *base\n  digest: {B}\n"
    )
    assert refs(text) == [("ghcr.io/acme/api", "1.0", A), ("ghcr.io/acme/api", "1.0", B)]


def test_of_several_merged_mappings_the_first_wins() -> None:
    text = (
        "a: &a {repository: ghcr.io/acme/a, tag: '1'}\nb: &b {repository: ghcr.io/acme/b, "
        "tag: '2'}\nimage:\n  <<: [*a, *b]\n"
    )
    assert refs(text)[-1] == ("ghcr.io/acme/a", "1", None)


def test_a_key_set_before_a_merge_that_also_sets_it_is_refused() -> None:
    text = "b: &b {tag: '2'}\nimage:\n  repository: ghcr.io/acme/a\n  tag: '1'\n  <<: *b\n"
    with pytest.raises(DuplicateKeyError, match="before a << merge"):
        deploy_references(text)


def test_a_mapping_that_merges_itself_is_refused_not_recursed_into() -> None:
    with pytest.raises(ManifestError, match="holds the merge itself") as caught:
        deploy_references("image: &img\n  repository: ghcr.io/acme/web\n  <<: *img\n")
    assert caught.value.line == 3


def test_duplicate_keys_are_refused_with_both_lines() -> None:
    text = f"images:\n  - name: ghcr.io/acme/web\n    digest: {A}\n    digest: {B}\n"
    with pytest.raises(DuplicateKeyError) as caught:
        deploy_references(text)
    assert caught.value.line == 4 and "first on line 3" in caught.value.message


def test_an_alias_bomb_is_bounded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        prev = f"*a{n - 1}"
        lines.append(f"a{n}: &a{n} [{', '.join([prev] * 10)}]")
    with pytest.raises(ManifestError, match="expands to more than"):
        deploy_references("\n".join(lines) + "\n")


def test_a_lookalike_name_is_kept_and_named() -> None:
    (found,) = deploy_references("image: ghcr.io/acme/w\u0435b:1.0\n")
    assert found.problem is not None and "U+0435" in found.problem


def test_inline_patches_are_read() -> None:
    text = (
        "patches:\n  - patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n"
        "      spec:\n        template:\n          spec:\n            containers:\n"
        "              - name: side\n                image: docker.io/evil/side:1\n"
        "  - patch: |-\n      - op: replace\n        path: /spec/template/spec/containers/0/image\n"
        "        value: docker.io/evil/main:2\n"
    )
    assert refs(text) == [("docker.io/evil/side", "1", None), ("docker.io/evil/main", "2", None)]


def test_registry_overrides_and_manifest_sources_are_reported_for_the_gate() -> None:
    text = (
        "global:\n  imageRegistry: evil.example\n"
        "spec:\n  source:\n    repoURL: https://github.com/acme/deploy\n"
        "    targetRevision: main\n    path: apps/web\n"
        "chartSpec:\n  chart: web\n  version: 1.2.0\n  sourceRef: {kind: HelmRepository, name: x}\n"
    )
    found = deploy_references(text)
    assert [r.shape for r in found] == ["registry", "source", "source"]
    assert all(r.problem for r in found)
    assert found[1].name == ("repoURL=https://github.com/acme/deploy, targetRevision=main, "
                             "path=apps/web")
