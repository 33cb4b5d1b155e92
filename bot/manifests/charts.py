"""Where a Helm chart from an OCI registry is named, and the scalars that hold its version.

Each place is recognised from the whole document, by its kind:

- Argo CD ``Application`` (and an ``ApplicationSet``'s ``template``): a source whose
  ``repoURL`` (``ghcr.io/acme/charts`` or ``oci://…``) and ``chart`` name the chart, or whose
  ``repoURL`` is ``oci://<chart>`` alone → ``targetRevision``;
- Flux ``HelmRelease``: ``spec.chart.spec.chart`` + ``version``, its ``sourceRef`` a
  ``HelmRepository`` of ``type: oci`` in the same file whose ``url`` is the chart's repository;
- Flux ``OCIRepository`` whose ``spec.url`` is ``oci://<chart>`` → ``spec.ref.tag``, and
  ``spec.ref.digest`` (kept, or added after the tag);
- an umbrella chart's ``Chart.yaml``: ``dependencies[]`` with ``repository: oci://…`` and
  ``name`` → ``version``;
- a helmfile: ``releases[]`` with ``chart: oci://<chart>`` → ``version``.

Only the OCIRepository holds a digest; elsewhere the version alone is written and the gate
resolves it in the registry.
"""

from __future__ import annotations

from bot.domain.images import canonical_image_name, is_digest
from bot.manifests.found import Found, Pair
from bot.yamlread.nodes import Document, Mapping, Node, Scalar, Sequence, resolve

OCI = "oci://"
# the places that hold a chart's version and no digest: the gate resolves the version
VERSION_ONLY_SHAPES = frozenset({"argocd-chart", "flux-helmrelease", "chart-dependency",
                                 "helmfile"})


def chart_places(documents: list[Document]) -> list[Found]:
    """Every chart reference of the documents of one file."""
    roots = [resolve(d.root) for d in documents if d.root is not None]
    mappings = [root for root in roots if isinstance(root, Mapping)]
    repositories = {name: url for root in mappings if (found := _helm_repository(root))
                    for name, url in [found]}
    places: list[Found] = []
    for root in mappings:
        kind = _text(root, "kind")
        spec = _mapping(root, "spec")
        if kind == "Application" and spec is not None:
            places += _argocd_sources(spec)
        elif kind == "ApplicationSet" and spec is not None:
            template = _mapping(_mapping(spec, "template"), "spec")
            places += _argocd_sources(template)
        elif kind == "HelmRelease" and spec is not None:
            places += _helm_release(spec, repositories)
        elif kind == "OCIRepository" and spec is not None:
            places += _oci_repository(spec)
        elif _text(root, "apiVersion") == "v2" and _sequence(root, "dependencies"):
            places += _dependencies(root)
        elif _sequence(root, "releases") is not None and kind is None:
            places += _helmfile_releases(root)
    return places


def _argocd_sources(spec: Mapping | None) -> list[Found]:
    if spec is None:
        return []
    sources: list[Node | None] = [_mapping(spec, "source")]
    listed = _sequence(spec, "sources")
    sources += [resolve(item) for item in listed.items] if listed is not None else []
    found: list[Found] = []
    for source in sources:
        if not isinstance(source, Mapping):
            continue
        url, chart = _text(source, "repoURL"), _text(source, "chart")
        oci = url is not None and url.lower().startswith(OCI)
        if url is None or ("://" in url and not oci) or (chart is None and not oci):
            continue  # a Git repository, or a Helm repository served over HTTP
        base = _strip_oci(url).rstrip("/")
        reference = f"{base}/{chart}" if chart else base
        place = _version_place("argocd-chart", reference, source, "targetRevision",
                               anchor_key="chart" if chart else "repoURL")
        if place is not None:
            found.append(place)
    return found


def _helm_repository(root: Mapping) -> tuple[str, str] | None:
    """(name, url without oci://) of a Flux HelmRepository of type oci."""
    if _text(root, "kind") != "HelmRepository":
        return None
    spec = _mapping(root, "spec")
    name = _text(_mapping(root, "metadata"), "name")
    url = _text(spec, "url")
    if spec is None or name is None or url is None or _text(spec, "type") != "oci":
        return None
    return name, _strip_oci(url).rstrip("/")


def _helm_release(spec: Mapping, repositories: dict[str, str]) -> list[Found]:
    chart_spec = _mapping(_mapping(spec, "chart"), "spec")
    chart = _text(chart_spec, "chart")
    source = _mapping(chart_spec, "sourceRef")
    if chart_spec is None or chart is None or source is None:
        return []
    if _text(source, "kind") != "HelmRepository":
        return []
    url = repositories.get(_text(source, "name") or "")
    if url is None:
        return []
    place = _version_place("flux-helmrelease", f"{url}/{chart}", chart_spec, "version",
                           anchor_key="chart")
    return [place] if place is not None else []


def _oci_repository(spec: Mapping) -> list[Found]:
    url = _text(spec, "url")
    ref = _mapping(spec, "ref")
    if url is None or not url.lower().startswith(OCI) or ref is None:
        return []
    place = _version_place("flux-ocirepository", _strip_oci(url), ref, "tag", anchor_key=None)
    if place is None:
        return []
    tag = ref.get("tag")
    version_pair = _pair(tag) if tag is not None else None
    digest = ref.get("digest")
    pair = _pair(digest) if digest is not None else None
    if pair is not None:
        place.digests = [pair]
        place.digest = pair[1].value if is_digest(pair[1].value) else None
    place.digest_key = "digest"
    if version_pair is not None:
        place.anchor_pair = version_pair  # a missing digest goes right after the tag
    return [place]


def _dependencies(root: Mapping) -> list[Found]:
    found: list[Found] = []
    listed = _sequence(root, "dependencies")
    for item in listed.items if listed is not None else []:
        entry = resolve(item)
        if not isinstance(entry, Mapping):
            continue
        repository, name = _text(entry, "repository"), _text(entry, "name")
        if repository is None or name is None or not repository.lower().startswith(OCI):
            continue
        reference = f"{_strip_oci(repository).rstrip('/')}/{name}"
        place = _version_place("chart-dependency", reference, entry, "version",
                               anchor_key="name")
        if place is not None:
            found.append(place)
    return found


def _helmfile_releases(root: Mapping) -> list[Found]:
    found: list[Found] = []
    listed = _sequence(root, "releases")
    for item in listed.items if listed is not None else []:
        entry = resolve(item)
        chart = _text(entry, "chart") if isinstance(entry, Mapping) else None
        if not isinstance(entry, Mapping) or chart is None or not chart.lower().startswith(OCI):
            continue
        place = _version_place("helmfile", _strip_oci(chart), entry, "version",
                               anchor_key="chart")
        if place is not None:
            found.append(place)
    return found


def _version_place(shape: str, reference: str, mapping: Mapping, key: str, *,
                   anchor_key: str | None) -> Found | None:
    """A chart named in ``mapping`` whose version is the value of ``key`` there (added after
    ``anchor_key`` when missing)."""
    try:
        canonical = canonical_image_name(reference)
    except ValueError:
        return None
    version = mapping.get(key)
    version_pair = _pair(version) if version is not None else None
    if version is not None and version_pair is None:
        return None  # a version that is not a scalar names nothing Conveyor can write
    anchor = mapping.get(anchor_key) if anchor_key else None
    line_node = version_pair[1] if version_pair is not None else mapping
    return Found(
        shape=shape, edit="chart", name=reference, match_names=(canonical,),
        line=line_node.line, column=line_node.column,
        tag=version_pair[1].value if version_pair is not None and version_pair[1].value
        else None,
        digest=None,
        tags=[version_pair] if version_pair is not None else [],
        mapping=mapping, anchor_pair=anchor, tag_key=key,
        cannot_add=f"write `{key}:` where the chart is named",
    )


def _pair(pair: tuple[Scalar, Node]) -> Pair | None:
    value = resolve(pair[1])
    return (pair[0], value) if isinstance(value, Scalar) else None


def _strip_oci(url: str) -> str:
    return url[len(OCI):] if url.lower().startswith(OCI) else url


def _mapping(node: Mapping | None, key: str) -> Mapping | None:
    found = node.get(key) if node is not None else None
    value = resolve(found[1]) if found is not None else None
    return value if isinstance(value, Mapping) else None


def _sequence(node: Mapping, key: str) -> Sequence | None:
    found = node.get(key)
    value = resolve(found[1]) if found is not None else None
    return value if isinstance(value, Sequence) else None


def _text(node: Mapping | None, key: str) -> str | None:
    found = node.get(key) if node is not None else None
    value = resolve(found[1]) if found is not None else None
    return value.value if isinstance(value, Scalar) and value.value else None
