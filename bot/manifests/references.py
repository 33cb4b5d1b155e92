"""What a file deploys: every image reference in it, read the way the deploy tools read it.

The editor (``locate.py``) finds the places a promotion may rewrite. The gate needs a different
answer: which images will run once the file is synced, whoever wrote it. This reader therefore

- resolves aliases and ``<<`` merge keys (explicit keys win over merged ones, and of several
  merged mappings the first wins), as Go YAML — and so Helm and Kustomize — do;
- refuses duplicate keys: Helm and Kustomize's loader (``sigs.k8s.io/yaml``) keep the last of
  them while field lookups on kyaml nodes find the first, so no single reading is "the" one;
- reports every image it sees, the service's own and any other: Kustomize ``images`` entries
  (``name``/``newName``/``newTag``/``digest``) and Argo CD's ``NAME=NEWNAME:TAG@DIGEST``
  strings, Helm-style blocks (``registry``/``repository``/``tag``/``digest``, under any key),
  ``image:`` strings (containers, initContainers, ephemeralContainers, Helm values), image
  volumes (``image.reference``), Argo CD ``helm.parameters``, and documents held in strings
  (Argo CD's ``helm.values``, Kustomize inline ``patch``/``patchesStrategicMerge`` patches,
  JSON 6902 operations on an ``…/image`` path), and the OCI Helm charts of ``charts.py``
  (Argo CD and Flux sources, ``Chart.yaml`` dependencies, helmfile releases: a version, and
  a digest where the place holds one);
- keeps a value that is not a valid reference (a Cyrillic ``е``, a stray space) as a
  reference with a ``problem``, so the gate names it instead of overlooking it.

Comments (Flux setters, Conveyor markers) do not change what is deployed and are ignored here.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.images import ImageRef, canonical_image_name, is_digest, parse_image_ref
from bot.manifests.charts import chart_places
from bot.manifests.errors import DuplicateKeyError, ManifestError
from bot.manifests.tree import MergeResolver, Resolved, parse_documents
from bot.yamlread.nodes import MAX_NODES, Mapping, Node, Scalar, Sequence, resolve

__all__ = ["DuplicateKeyError", "ImageReference", "deploy_references"]


@dataclass(frozen=True)
class ImageReference:
    """One image the file deploys.

    ``name`` is the name that runs (Kustomize's ``newName``, Helm's ``registry/repository``),
    as written; ``replaces`` is the Kustomize ``name`` an entry applies to (None elsewhere).
    ``problem`` says why the value cannot be read as an image reference.
    """

    line: int
    shape: str  # "kustomize" | "helm" | "image" | "helm-parameters" | a chart place
    name: str
    tag: str | None
    digest: str | None
    replaces: str | None = None
    problem: str | None = None

    @property
    def canonical_name(self) -> str:
        """The comparable name; a name that does not parse compares as written."""
        try:
            return canonical_image_name(self.name)
        except ValueError:
            return self.name

    @property
    def identity(self) -> tuple[str, str | None, str | None, str | None]:
        replaces = None
        if self.replaces is not None:
            try:
                replaces = canonical_image_name(self.replaces)
            except ValueError:
                replaces = self.replaces
        return self.canonical_name, self.tag, self.digest, replaces

    def __str__(self) -> str:
        return str(ImageRef(self.name, self.tag, self.digest))


def deploy_references(text: str, *, path: str = "<file>", tag_keys: tuple[str, ...] = ()
                      ) -> list[ImageReference]:
    """Every image reference ``text`` deploys, in file order.

    ``tag_keys`` are keys a chart reads the tag from besides ``tag`` (the services'
    ``tag_key``), tried after it.

    Raises :class:`ManifestError` when the file does not parse, names a key twice or expands
    beyond :data:`MAX_NODES` nodes.
    """
    documents, _ = parse_documents(text, path)
    reader = _Reader(path, tag_keys)
    for document in documents:
        if document.root is not None:
            reader.walk(document.root)
    places = chart_places(documents)
    charts = [ImageReference(line=place.line, shape=place.shape, name=place.name,
                             tag=place.tag, digest=place.digest) for place in places]
    # a source that is an OCI chart is judged as that chart, by its digest
    spans = [_key_lines(place.mapping) for place in places if place.mapping is not None]
    found = [r for r in reader.found
             if r.shape != "source" or not any(low <= r.line <= high for low, high in spans)]
    return sorted([*found, *charts], key=lambda r: r.line)


def _key_lines(mapping: Mapping) -> tuple[int, int]:
    lines = [key.line for key, _ in mapping.pairs] or [mapping.line]
    return min(lines), max(lines)


def _string(node: Scalar | None) -> str | None:
    """A scalar's value when YAML reads it as a non-empty string (quoted, or a plain word)."""
    if node is None or not node.value:
        return None
    if node.style is None and node.tag is None and node.value in ("null", "Null", "NULL", "~"):
        return None
    return node.value


class _Reader:
    def __init__(self, path: str, tag_keys: tuple[str, ...]) -> None:
        self.path = path
        self.tag_keys = ("tag", *tag_keys)
        self.found: list[ImageReference] = []
        self.budget = MAX_NODES
        self.merges = MergeResolver(path)

    # -- resolution ----------------------------------------------------------------------------
    def _spend(self, line: int) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise ManifestError(self.path, line, f"the file expands to more than "
                                f"{MAX_NODES} nodes through aliases")

    # -- walking -------------------------------------------------------------------------------
    def walk(self, root: Node) -> None:
        # (node, the key it is the value of); an explicit stack: deep files must not recurse.
        stack: list[tuple[Node, str | None]] = [(root, None)]
        while stack:
            node, key = stack.pop()
            target = resolve(node)
            if target is None:
                continue
            self._spend(target.line)
            if isinstance(target, Sequence):
                stack.extend((item, None) for item in reversed(target.items))
            elif isinstance(target, Mapping):
                resolved = self.merges.resolve(target)
                self._mapping(resolved, key)
                for name, (_, value) in reversed(list(resolved.entries.items())):
                    stack.append((value, name))

    def _mapping(self, block: Resolved, key: str | None) -> None:
        self._helm_block(block, key)
        image = block.get("image")
        if isinstance(image, Scalar):
            self._image_string(image, "image")
        elif isinstance(image, Mapping):
            reference = self.merges.resolve(image).scalar("reference")
            if reference is not None and image_volume(block):
                self._image_string(reference, "image")
        images = block.get("images")
        if isinstance(images, Sequence):
            for item in images.items:
                entry = resolve(item)
                if isinstance(entry, Mapping):
                    self._kustomize_entry(self.merges.resolve(entry))
                elif isinstance(entry, Scalar):
                    self._argocd_image(entry)
        parameters = block.get("parameters")
        if key == "helm" and isinstance(parameters, Sequence):
            self._helm_parameters(parameters)
        values = block.scalar("values")
        if key == "helm" and values is not None and values.value.strip():
            self._inline_document(values, "the helm.values string")
        patch = block.scalar("patch")
        if patch is not None and patch.value.strip():
            self._inline_document(patch, "the inline patch")
        strategic = block.get("patchesStrategicMerge")
        if isinstance(strategic, Sequence):
            for item in strategic.items:
                inline = resolve(item)
                if isinstance(inline, Scalar) and "\n" in inline.value:
                    self._inline_document(inline, "the inline patch")
        operation = block.scalar("path")
        value = block.scalar("value")
        if block.scalar("op") is not None and operation is not None and value is not None \
                and operation.value.rstrip("/").endswith("/image"):
            self._image_string(value, "image")  # a JSON 6902 patch setting an image
        self._registry_override(block)
        self._source(block)

    def _registry_override(self, block: Resolved) -> None:
        """A registry set apart from any repository (Bitnami's ``global.imageRegistry``, an
        ``image.registry`` override): it moves images named elsewhere."""
        for name in ("imageRegistry", "registry"):
            node = block.scalar(name)
            value = _string(node)
            if node is None or value is None or (name == "registry"
                                                 and block.scalar("repository") is not None):
                continue
            self._add(node.line, "registry", f"{name}: {value}", None, None,
                      problem=f"{name} {value!r} sets the registry of images the chart names "
                      "elsewhere: the gate cannot tell which images it moves")

    def _source(self, block: Resolved) -> None:
        """Where an Argo CD Application or a Flux HelmRelease takes its manifests from: a new
        source is a new deployment the gate cannot read."""
        keys: tuple[str, ...] = ()
        if block.scalar("repoURL") is not None:
            keys = ("repoURL", "targetRevision", "path", "chart", "ref")
        elif block.scalar("chart") is not None and block.get("sourceRef") is not None:
            keys = ("chart", "version")
        found = [(k, n) for k in keys if (n := block.scalar(k)) is not None]
        if not found:
            return
        where = ", ".join(f"{k}={n.value}" for k, n in found)
        self._add(found[0][1].line, "source", where, None, None,
                  problem=f"the manifests come from {where}: the gate cannot judge what another "
                  "source deploys")

    def _add(self, line: int, shape: str, name: str, tag: str | None, digest: str | None,
             replaces: str | None = None, problem: str | None = None) -> None:
        self.found.append(ImageReference(line, shape, name, tag, digest, replaces, problem))

    def _image_string(self, node: Scalar, shape: str) -> None:
        value = _string(node)
        if value is None:
            return
        try:
            ref = parse_image_ref(value)
        except ValueError as exc:
            self._add(node.line, shape, value, None, None, problem=_why(value, exc))
            return
        self._add(node.line, shape, ref.name, ref.tag, ref.digest)

    def _kustomize_entry(self, entry: Resolved) -> None:
        name_node = entry.scalar("name")
        name = _string(name_node)
        if name is None or name_node is None:
            return
        new_name_node = entry.scalar("newName")
        new_name = _string(new_name_node)
        line = (new_name_node or name_node).line
        tag, digest = _tag_and_digest(_string(entry.scalar("newTag")),
                                      _string(entry.scalar("digest")))
        runs = new_name if new_name is not None else name
        try:
            ref = parse_image_ref(runs)
        except ValueError as exc:
            self._add(line, "kustomize", runs, tag, digest, name, _why(runs, exc))
            return
        # A newName may carry its own tag or digest; newTag and digest still override them.
        self._add(line, "kustomize", ref.name, tag or ref.tag, digest or ref.digest, name,
                  _digest_problem(entry.scalar("digest")))

    def _argocd_image(self, node: Scalar) -> None:
        """``NAME[=NEWNAME][:TAG][@DIGEST]`` (Argo CD's ``kustomize.images``)."""
        value = _string(node)
        if value is None:
            return
        replaces, sep, runs = value.partition("=")
        if not sep:
            replaces, runs = value, value
        try:
            ref = parse_image_ref(runs)
            original = parse_image_ref(replaces).name if sep else ref.name
        except ValueError as exc:
            self._add(node.line, "kustomize", runs, None, None, replaces, _why(value, exc))
            return
        self._add(node.line, "kustomize", ref.name, ref.tag, ref.digest, original)

    def _helm_block(self, block: Resolved, key: str | None) -> None:
        repository_node = block.scalar("repository")
        repository = _string(repository_node)
        tag_node = next((n for k in self.tag_keys if (n := block.scalar(k)) is not None), None)
        tag_value = _string(tag_node)
        digest_value = _string(block.scalar("digest"))
        is_image_key = key is not None and key.lower().endswith("image")
        if repository is None or repository_node is None:
            if is_image_key and (tag_value is not None or digest_value is not None):
                line = (tag_node or block.scalar("digest") or block.node).line
                self._add(line, "helm", f"{key}.repository", tag_value, digest_value,
                          problem="a tag or digest without a repository in this file: the "
                          "image it applies to is set elsewhere (the chart's defaults)")
            return
        if tag_value is None and digest_value is None and not is_image_key:
            return  # a "repository" that is not an image (a chart or Git repository)
        registry = _string(block.scalar("registry"))
        name = f"{registry.rstrip('/')}/{repository}" if registry else repository
        tag, digest = _tag_and_digest(tag_value, digest_value)
        # A repository merged in from an anchor is reported where the block uses it.
        inside = block.node.start <= repository_node.start < block.node.end
        line = repository_node.line if inside else block.node.line
        try:
            ref = parse_image_ref(name)
        except ValueError as exc:
            self._add(line, "helm", name, tag, digest, problem=_why(name, exc))
            return
        self._add(line, "helm", ref.name, tag or ref.tag, digest or ref.digest,
                  problem=_digest_problem(block.scalar("digest")))

    def _helm_parameters(self, parameters: Sequence) -> None:
        """Argo CD ``helm.parameters``: ``{name: image.repository, value: ...}`` entries."""
        groups: dict[str, dict[str, Scalar]] = {}
        for item in parameters.items:
            entry = resolve(item)
            if not isinstance(entry, Mapping):
                continue
            resolved = self.merges.resolve(entry)
            name, value = _string(resolved.scalar("name")), resolved.scalar("value")
            if name is None or value is None:
                continue
            prefix, _, field = name.rpartition(".")
            if field in ("repository", "registry", "tag", "digest"):
                groups.setdefault(prefix, {})[field] = value
            elif field == "image" or name == "image":
                self._image_string(value, "helm-parameters")
        for fields in groups.values():
            repository = fields.get("repository")
            if repository is None or _string(repository) is None:
                continue
            registry = _string(fields.get("registry"))
            name = f"{registry.rstrip('/')}/{repository.value}" if registry else repository.value
            tag, digest = _tag_and_digest(_string(fields.get("tag")),
                                          _string(fields.get("digest")))
            try:
                ref = parse_image_ref(name)
            except ValueError as exc:
                self._add(repository.line, "helm-parameters", name, tag, digest,
                          problem=_why(name, exc))
                continue
            self._add(repository.line, "helm-parameters", ref.name, tag or ref.tag,
                      digest or ref.digest)

    def _inline_document(self, node: Scalar, what: str) -> None:
        """A YAML document held in a string: ``helm.values: |``, a Kustomize ``patch: |``."""
        try:
            inner = deploy_references(node.value, path=self.path, tag_keys=self.tag_keys[1:])
        except ManifestError as exc:
            raise ManifestError(self.path, node.line, f"{what}: {exc.message}") from exc
        for ref in inner:
            self.found.append(ImageReference(node.line, ref.shape, ref.name, ref.tag,
                                             ref.digest, ref.replaces, ref.problem))


def image_volume(block: Resolved) -> bool:
    """A Kubernetes image volume: ``{name: ..., image: {reference: ...}}``."""
    return block.scalar("name") is not None


def _tag_and_digest(tag: str | None, digest: str | None) -> tuple[str | None, str | None]:
    """``newTag``/``tag`` may carry ``@sha256:…`` (Conveyor writes ``tag: 1.4.2@sha256:…``)."""
    tag_digest = None
    if tag is not None and "@" in tag:
        tag, _, tag_digest = tag.partition("@")
        tag = tag or None
    return tag, digest if digest is not None else tag_digest


def _digest_problem(node: Scalar | None) -> str | None:
    value = _string(node)
    if value is None or is_digest(value):
        return None
    return f"digest {value!r} is not sha256: and 64 lower-case hex digits"


def _why(value: str, exc: ValueError) -> str:
    foreign = [f"{ch!r} (U+{ord(ch):04X})" for ch in dict.fromkeys(value) if not ch.isascii()]
    if foreign:
        return (f"{value!r} is not a valid image reference: it contains non-ASCII "
                f"characters {', '.join(foreign[:3])}")
    return f"{value!r} is not a valid image reference: {exc}"
