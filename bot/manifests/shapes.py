"""Image references recognised by their structure: Kustomize entries and image strings.

- ``kustomize``: a mapping in an ``images:`` list (``name``/``newName``/``newTag``/``digest``);
  a ``newName`` that carries a tag or digest is edited in place;
- ``image-string``: an ``image:`` key whose value is a whole reference;
- ``image-volume``: a Kubernetes image volume, ``image: {reference: <reference>}``;
- ``argocd-image``: a string in a ``kustomize.images`` list (Argo CD Application sources and
  argocd-image-updater write-back files): ``NAME:TAG``, ``NAME@DIGEST`` or
  ``NAME=NEWNAME:TAG``.

Helm values and Helm parameters are in ``helm.py``; comments in ``comments.py``.
"""

from __future__ import annotations

from bot.domain.images import canonical_image_name, is_digest, parse_image_ref
from bot.manifests.errors import AmbiguousImageError
from bot.manifests.found import Found, is_string, reference, scalar_value, split_tag
from bot.yamlread.nodes import Mapping, Node, Scalar


def _canonical(value: str) -> str | None:
    try:
        return canonical_image_name(value)
    except ValueError:
        return None


def kustomize_entry(entry: Mapping, images: Node) -> Found | None:
    name = scalar_value(entry, "name")
    if name is None or not name[1].value:
        return None
    new_name = scalar_value(entry, "newName")
    new_tag = scalar_value(entry, "newTag")
    digest = scalar_value(entry, "digest")
    pairs = [p for p in (name, new_name) if p is not None]
    match_names = [c for c in (_canonical(p[1].value) for p in pairs) if c is not None]
    if not match_names:
        return None
    effective = new_name if new_name is not None else name
    pinned = reference(new_name[1]) if new_name is not None else None
    if pinned is not None and (pinned.tag is not None or pinned.digest is not None):
        assert new_name is not None
        problem = None
        if new_tag is not None or digest is not None:
            extra = new_tag or digest
            assert extra is not None
            problem = (
                extra[0].line,
                "newName carries a tag or digest and the entry has "
                f"{extra[0].value} too; keep one",
                AmbiguousImageError,
            )
        return Found(
            shape="kustomize",
            edit="refs",
            name=pinned.name,
            match_names=tuple(dict.fromkeys(match_names)),
            line=new_name[1].line,
            column=new_name[1].column,
            tag=pinned.tag,
            digest=pinned.digest,
            refs=[new_name[1]],
            names=[name[1]],
            container=images,
            problem=problem,
        )
    tag = digest_value = None
    if new_tag is not None:
        tag, digest_value = split_tag(new_tag[1].value)
    if digest is not None and is_digest(digest[1].value):
        digest_value = digest[1].value
    last_name_pair = max(pairs, key=lambda p: p[0].start)
    return Found(
        shape="kustomize",
        edit="kustomize",
        name=effective[1].value,
        match_names=tuple(dict.fromkeys(match_names)),
        line=effective[1].line,
        column=effective[1].column,
        tag=tag,
        digest=digest_value,
        names=[p[1] for p in pairs],
        tags=[new_tag] if new_tag is not None else [],
        digests=[digest] if digest is not None else [],
        mapping=entry,
        anchor_pair=new_tag if new_tag is not None else last_name_pair,
        tag_key="newTag",
        digest_key="digest",
        container=images,
    )


def image_string(node: Scalar, shape: str = "image-string") -> Found | None:
    ref = reference(node)
    if ref is None:
        return None
    return Found(
        shape=shape,
        edit="refs",
        name=ref.name,
        match_names=(ref.canonical_name,),
        line=node.line,
        column=node.column,
        tag=ref.tag,
        digest=ref.digest,
        refs=[node],
    )


def image_volume(source: Mapping) -> Found | None:
    """``image: {reference: ghcr.io/acme/web:1.4.1, pullPolicy: ...}`` (Kubernetes 1.31+)."""
    pair = scalar_value(source, "reference")
    return image_string(pair[1], "image-volume") if pair is not None else None


def split_argocd_image(value: str) -> tuple[str, str]:
    """``NAME=NEWNAME:TAG`` → (``NAME=``, ``NEWNAME:TAG``); without ``=``, ("", value)."""
    original, equals, target = value.partition("=")
    return (original + equals, target) if equals else ("", value)


def argocd_image(node: Scalar, images: Node) -> Found | None:
    """One string of a ``kustomize.images`` list, as Argo CD hands it to kustomize."""
    if not node.value or not is_string(node):
        return None
    prefix, target = split_argocd_image(node.value)
    try:
        ref = parse_image_ref(target)
    except ValueError:
        return None
    match_names = [ref.canonical_name]
    if prefix:
        original = _canonical(prefix[:-1])
        if original is None:
            return None
        match_names.insert(0, original)
    return Found(
        shape="argocd-image",
        edit="refs",
        name=ref.name,
        match_names=tuple(dict.fromkeys(match_names)),
        line=node.line,
        column=node.column,
        tag=ref.tag,
        digest=ref.digest,
        refs=[node],
        container=images,
        prefixed=True,
    )
