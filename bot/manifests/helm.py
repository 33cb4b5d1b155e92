"""Helm image references: values blocks and Argo CD ``helm.parameters``.

A values block is a mapping holding ``repository`` (optional ``registry``) and the tag key
(``tag``, or the service's ``tag_key``) and/or ``digest``, under any key. A block that merges
others (``<<: *base``) is read as YAML resolves it: its own keys win, then the merged
mappings' in order. Such a block is an image reference of its own when it sets any image key
itself or takes them from more than one mapping; one that only repeats a single block (``<<:
*img`` and nothing else of the image) inherits that block's edit instead, when that block is
an image reference itself.

A block with ``version:`` or ``imageTag:`` and no ``tag:`` is read with that value as its tag,
but a promotion of it is refused unless the service names its ``tag_key``: guessing which key
the chart reads would edit the wrong scalar.
"""

from __future__ import annotations

from collections.abc import Mapping as AbstractMapping

from bot.domain.images import canonical_image_name, is_digest
from bot.manifests.errors import UneditableImageError
from bot.manifests.found import Found, Pair, is_string, reference, scalar_value, split_tag
from bot.manifests.tree import effective_entry, merge_pair, own_entry
from bot.names import POLICY_PATH
from bot.yamlread.nodes import Mapping, Node, Scalar, Sequence, resolve

ALTERNATIVE_TAG_KEYS = ("version", "imageTag")
TagKeys = AbstractMapping[str, str]  # canonical image name -> the key its chart reads the tag from


def _hint(name: str, key: str, written: str, missing: str) -> str:
    return (
        f"{name} has {written} and no {missing}; if the chart reads the tag from `{key}`, set "
        f"`tag_key: {key}` on this service in {POLICY_PATH}"
    )


def _lookup(block: Mapping, key: str, merging: bool) -> tuple[Pair, Mapping] | None:
    entry = effective_entry(block, key) if merging else own_entry(block, key)
    if entry is None:
        return None
    value = resolve(entry.value)
    return ((entry.key, value), entry.provider) if isinstance(value, Scalar) else None


def _image_name(repository: Scalar, registry: Scalar | None) -> tuple[str, str] | None:
    """(name as written, canonical name), or None when the values do not name an image."""
    ref = reference(repository)
    if ref is None or ref.tag is not None or ref.digest is not None:
        return None
    name = ref.name
    if registry is not None and registry.value:
        name = f"{registry.value.rstrip('/')}/{ref.name}"
    try:
        return name, canonical_image_name(name)
    except ValueError:
        return None


def values_block(block: Mapping, parent_key: str | None, tag_keys: TagKeys) -> Found | None:
    merge = merge_pair(block)
    merging = merge is not None
    repository = _lookup(block, "repository", merging)
    if repository is None:
        return None
    registry = _lookup(block, "registry", merging)
    named = _image_name(repository[0][1], registry[0][1] if registry else None)
    if named is None:
        return None
    name, canonical = named
    tag_key = tag_keys.get(canonical, "tag")
    tag = _lookup(block, tag_key, merging)
    digest = _lookup(block, "digest", merging)
    alternative = None
    if tag is None and tag_key == "tag":
        alternative = next(
            (hit for k in ALTERNATIVE_TAG_KEYS if (hit := _lookup(block, k, merging))), None
        )
    image_key = "image" in (parent_key or "").lower()
    if tag is None and digest is None and alternative is None and not image_key:
        return None
    present = [v for v in (repository, registry, tag, digest, alternative) if v is not None]
    providers = {id(provider) for _, provider in present}
    repeats = present[0][1] if len(providers) == 1 and present[0][1] is not block else None

    def own(value: tuple[Pair, Mapping] | None) -> Pair | None:
        return value[0] if value is not None and value[1] is block else None

    if tag is None and alternative is not None:
        tag = alternative  # read (a promotion of it is refused below), never edited
    tag_value = digest_value = None
    if tag is not None:
        tag_value, digest_value = split_tag(tag[0][1].value)
    if digest is not None and is_digest(digest[0][1].value):
        digest_value = digest[0][1].value
    parts = (("name", repository), ("name", registry), ("tag", tag), ("digest", digest))
    inherited = [(part, v[0]) for part, v in parts if v is not None and own(v) is None]
    own_pairs = [p for p in map(own, (tag, repository, registry, digest)) if p is not None]
    anchor: tuple[Scalar, Node] | None = own_pairs[0] if own_pairs else merge
    first = min(own_pairs, key=lambda p: p[1].start, default=None)
    line_node = first[1] if own(repository) is None and first is not None else repository[0][1]
    if merge is not None and first is None:
        line_node = merge[0]
    found = Found(
        shape="helm",
        edit="helm",
        name=name,
        match_names=(canonical,),
        line=line_node.line,
        column=line_node.column,
        tag=tag_value,
        digest=digest_value,
        names=[p[1] for p in map(own, (repository, registry)) if p is not None],
        tags=[p] if (p := own(tag)) is not None else [],
        digests=[p] if (p := own(digest)) is not None else [],
        mapping=block,
        anchor_pair=anchor,
        tag_key=tag_key,
        digest_key="digest" if digest is not None else None,
        inherited=inherited,
        repeats=repeats,
    )
    if alternative is not None:
        key = alternative[0][0]
        hint = _hint(name, key.value, f"`{key.value}:`", "`tag:`")
        found.problem = (key.line, hint, UneditableImageError)
    return found


# -- Argo CD helm.parameters ------------------------------------------------------------------

NAME_SUFFIXES = (".repository", ".name")  # argocd-image-updater writes <p>.name by default


def helm_parameters(parameters: Sequence, tag_keys: TagKeys) -> list[Found]:
    """``{name: <p>.repository, value: <image>}`` with ``<p>.tag`` / ``<p>.digest`` beside it."""
    values: dict[str, list[Pair]] = {}
    for item in parameters.items:
        entry = resolve(item)
        if not isinstance(entry, Mapping):
            continue
        name, value = scalar_value(entry, "name"), scalar_value(entry, "value")
        if name is not None and value is not None and is_string(name[1]):
            values.setdefault(name[1].value, []).append(value)
    found: list[Found] = []
    for parameter, pairs in values.items():
        suffix = next((s for s in NAME_SUFFIXES if parameter.endswith(s)), None)
        if suffix is None or len(parameter) == len(suffix):
            continue
        prefix = parameter[: -len(suffix)]
        registry = values.get(f"{prefix}.registry", [])
        for repository in pairs:
            result = _parameter(prefix, parameter, repository, registry, values, tag_keys)
            if result is not None:
                found.append(result)
    return found


def _parameter(
    prefix: str,
    parameter: str,
    repository: Pair,
    registry: list[Pair],
    values: dict[str, list[Pair]],
    tag_keys: TagKeys,
) -> Found | None:
    named = _image_name(repository[1], registry[0][1] if registry else None)
    if named is None:
        return None
    name, canonical = named
    tag_key = tag_keys.get(canonical, "tag")
    tags = values.get(f"{prefix}.{tag_key}", [])
    digests = values.get(f"{prefix}.digest", [])
    alternative = None
    if not tags and tag_key == "tag":
        alternative = next((k for k in ALTERNATIVE_TAG_KEYS if f"{prefix}.{k}" in values), None)
    if parameter.endswith(".name") and not (tags or digests or alternative):
        return None  # "<p>.name" alone is too common a parameter to be taken for an image
    if alternative is not None:
        tags = values[f"{prefix}.{alternative}"]  # read, but a promotion of it is refused
    tag_value = digest_value = None
    if tags:
        tag_value, digest_value = split_tag(tags[0][1].value)
    if digests and is_digest(digests[0][1].value):
        digest_value = digests[0][1].value
    found = Found(
        shape="helm-parameters",
        edit="helm",
        name=name,
        match_names=(canonical,),
        line=repository[1].line,
        column=repository[1].column,
        tag=tag_value,
        digest=digest_value,
        names=[repository[1]] + [p[1] for p in registry],
        tags=list(tags),
        digests=list(digests),
        tag_key=tag_key,
        digest_key="digest" if digests else None,
        cannot_add=f"add a parameter {prefix}.{tag_key} beside {parameter}",
    )
    if alternative is not None:
        hint = _hint(name, alternative, f"`{prefix}.{alternative}`", f"`{prefix}.tag`")
        found.problem = (repository[1].line, hint, UneditableImageError)
    return found
