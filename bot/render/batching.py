"""Many overlays of one commit in one kustomize run, split back into exactly what each
overlay's own build prints (pure).

A kustomize run costs a process start and, once a strategic-merge patch is applied, the load
of Kubernetes' OpenAPI schema: about 50 and 130 ms with `kubectl kustomize` v1.37, against a
few milliseconds of work for a typical overlay. One run over a generated kustomization that
names each overlay through a wrapper of its own (``w<i>``) pays that once. Each wrapper adds
one field, ``metadata.conveyor-batch-<nonce>: {g: <i>}``, with a LabelTransformer whose only
field spec is that path: the field says which overlay a resource came from and is taken out
of the output line by line, so an overlay's part is the text its own build prints.

Such a run is the overlays' own builds only where kustomize's top-level steps, which now see
every overlay at once, cannot mix them (kustomize v5.8 `api/krusty/kustomizer.go`,
`api/internal/target/kusttarget.go`):
- ``vars``, ``configurations``, ``crds``, ``openapi``, ``buildMetadata``, ``sortOptions``,
  plugin fields and ``helmCharts`` act on the whole build or on global state: an overlay that
  reads a kustomization with one of them, or with a field not known here, is built alone;
- hash suffixes are computed at the top: a ConfigMap's or Secret's hash covers its name and
  data only, but any other kind marked ``needs-hash`` would hash the marker too, and a
  ``local-config`` resource is dropped at the top after it could serve as a name referral:
  inputs that mention either, an internal annotation, or a YAML escape are built alone;
- name references are fixed at the top among all resources: a referrer's name field is
  rewritten to a *renamed* resource whose previous name it holds. Where no patch or
  replacement renames (a JSON 6902 operation on ``/metadata/name``, ``allowNameChange``), every
  previous name of a resource is part of its final name (prefixes, suffixes, hash). An
  overlay's part is kept only when no value at one of kustomize's name-reference field paths
  in it is part of the name of another overlay's resource and none of those values is a
  mapping with a ``namespace`` (whose candidates kustomize groups by original namespace): then
  no other overlay's resource was a candidate, and the choice among its own is the one its
  own build makes. Otherwise the overlay is built alone;
- two overlays with a resource of one id fail the run, as does an overlay that fails alone:
  the batch is split in halves and tried again, down to single builds.
"""

from __future__ import annotations

import bisect
import json
import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from bot.render.inputs import KUSTOMIZATION_NAMES, top_mapping

MARKER_PREFIX = "conveyor-batch-"
# Kustomization fields whose effect stays within the kustomization's own part of the build.
LOCAL_FIELDS = frozenset({
    "apiVersion", "kind", "metadata", "resources", "bases", "components", "namespace",
    "namePrefix", "nameSuffix", "commonLabels", "labels", "commonAnnotations", "images",
    "replicas", "patches", "patchesStrategicMerge", "patchesJson6902", "configMapGenerator",
    "secretGenerator", "generatorOptions",
})
# Text that may mark a resource for hashing or dropping, carry kustomize's internal
# annotations, or spell either with an escape or an encoding.
UNSAFE_TEXT = ("needs-hash", "needsHashSuffix", "local-config", "internal.config.kubernetes.io",
               "\\", "!!binary")
# JSON pointers whose change renames a resource.
RENAMING_POINTERS = frozenset({"", "/", "/metadata", "/metadata/name"})
# kustomize v5.8's default name-reference field paths
# (`api/internal/konfig/builtinpluginconsts/namereference.go`), every kind's together.
_POD_PATHS = tuple(
    f"{prefix}{pod}" for prefix in ("spec/", "spec/template/spec/", "template/spec/",
                                    "spec/jobTemplate/spec/template/spec/")
    for pod in (
        "containers/env/valueFrom/configMapKeyRef/name",
        "containers/env/valueFrom/secretKeyRef/name", "containers/envFrom/configMapRef/name",
        "containers/envFrom/secretRef/name", "initContainers/env/valueFrom/configMapKeyRef/name",
        "initContainers/env/valueFrom/secretKeyRef/name",
        "initContainers/envFrom/configMapRef/name", "initContainers/envFrom/secretRef/name",
        "imagePullSecrets/name", "priorityClassName", "serviceAccountName",
        "volumes/configMap/name", "volumes/persistentVolumeClaim/claimName",
        "volumes/projected/sources/configMap/name", "volumes/projected/sources/secret/name",
        "volumes/secret/secretName"))
NAME_REFERENCE_PATHS = (
    *_POD_PATHS, "imagePullSecrets/name",
    "metadata/annotations/ingress.kubernetes.io\\/auth-secret",
    "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
    "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
    "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
    "parameters/adminSecretName", "parameters/secretName", "parameters/secretRef",
    "parameters/userSecretName", "roleRef/name", "rules/resourceNames",
    "spec/azureFile/secretName", "spec/backend/serviceName", "spec/configSource/configMap",
    "spec/defaultBackend/service/name", "spec/imagePullSecrets/name", "spec/ingressClassName",
    "spec/policyName", "spec/priorityClassName", "spec/rules/http/paths/backend/service/name",
    "spec/rules/http/paths/backend/serviceName", "spec/scaleTargetRef/name",
    "spec/service/name", "spec/serviceAccountName", "spec/serviceName",
    "spec/storageClassName", "spec/tls/secretName",
    "spec/volumeClaimTemplates/spec/storageClassName", "spec/volumeName", "subjects",
    "webhooks/clientConfig/service",
)
# Each path's fields, split on the slashes that are not escaped ("a\\/b" is one field).
_REFERENCE_FIELDS = tuple(
    tuple(field.replace("\\/", "/") for field in re.split(r"(?<!\\)/", path))
    for path in NAME_REFERENCE_PATHS)


def alone_reason(files: Mapping[str, str | bytes],
                 seen: dict[tuple[str, str | bytes], str | None] | None = None) -> str | None:
    """Why an overlay over ``files`` (every file its build reads) must be built alone; None
    when it may share a run. ``seen`` keeps each file's answer for the next overlay (a base
    or component many overlays read)."""
    seen = {} if seen is None else seen
    for path, content in files.items():
        if (path, content) not in seen:
            seen[(path, content)] = _file_reason(path, content)
        if (reason := seen[(path, content)]) is not None:
            return reason
    return None


def _file_reason(path: str, content: str | bytes) -> str | None:
    if isinstance(content, bytes):
        return f"`{path}` is binary"
    if any(text in content for text in UNSAFE_TEXT):
        return f"`{path}` may mark resources for hashing or dropping"
    if posixpath.basename(path) in KUSTOMIZATION_NAMES:
        return _kustomization_reason(path, content)
    return _renaming_reason(path, content)


def _kustomization_reason(path: str, text: str) -> str | None:
    data = top_mapping(text)
    if not data:
        return f"`{path}` is empty or unreadable"
    fields = sorted(str(key) for key in data if key not in LOCAL_FIELDS)
    if fields:
        return f"`{path}` uses `{fields[0]}`"
    for field in ("patches", "patchesJson6902"):
        entries = data.get(field)
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, dict):
                continue
            options = entry.get("options")
            if isinstance(options, dict) and (options.get("allowNameChange")
                                              or options.get("allowKindChange")):
                return f"`{path}` has a patch that may rename"
            inline = entry.get("patch")
            if isinstance(inline, str) and _renaming_reason(path, inline) is not None:
                return f"`{path}` has a patch that may rename"
    return None


def _renaming_reason(path: str, text: str) -> str | None:
    """A JSON 6902 patch (a YAML or JSON list of operations) that touches a resource's name."""
    if not re.search(r"^\s*[-\[]", text, re.MULTILINE):
        return None  # no document of the file can be a list
    try:
        documents = list(YAML(typ="safe").load_all(text))
    except YAMLError:
        return None  # kustomize cannot read it either: the run fails and is split
    for document in documents:
        if not isinstance(document, list):
            continue
        for operation in document:
            if not isinstance(operation, dict):
                continue
            for key in ("path", "from"):
                pointer = operation.get(key)
                if isinstance(pointer, str) and pointer.rstrip("/") in RENAMING_POINTERS:
                    return f"`{path}` has a JSON patch of `{pointer}`"
    return None


def marker(nonce: str) -> str:
    return MARKER_PREFIX + nonce


def wrappers(folders: list[str], nonce: str, full_name: str) -> dict[str, str]:
    """The generated kustomizations (path below the generated folder → text): the top one
    naming ``w<i>`` for each of ``folders``, each wrapper naming its overlay below ``repo``
    (a folder beside the generated one) and marking its resources."""
    top = "resources:\n" + "".join(f"- w{index}\n" for index in range(len(folders)))
    found = {"kustomization.yaml": top}
    for index, folder in enumerate(folders):
        target = posixpath.join("../..", full_name, folder) if folder else f"../../{full_name}"
        transformer = (
            "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: conveyor-batch\n"
            f"labels:\n  g: \"{index}\"\nfieldSpecs:\n- path: metadata/{marker(nonce)}\n"
            "  create: true\n")
        found[f"w{index}/kustomization.yaml"] = (
            f"resources:\n- {json.dumps(target)}\n"
            f"transformers:\n- {json.dumps(transformer)}\n")
    return found


def split(output: str, count: int, nonce: str) -> list[str] | None:
    """The combined ``output`` as ``count`` overlays' own outputs, the marker taken out;
    None when a document carries no marker of this run."""
    pattern = re.compile(rf"^  {re.escape(marker(nonce))}:\n    g: \"(\d+)\"\n", re.MULTILINE)
    parts: list[list[str]] = [[] for _ in range(count)]
    for document in _documents(output):
        found = list(pattern.finditer(document))
        if len(found) != 1 or int(found[0][1]) >= count:
            return None
        match = found[0]
        parts[int(match[1])].append(document[:match.start()] + document[match.end():])
    return ["---\n".join(part) for part in parts]


def _documents(output: str) -> Iterator[str]:
    """kustomize's output stream as its documents' texts (a document ends with a newline;
    ``---`` at the start of a line only ever separates, block scalars being indented)."""
    start = 0
    for found in re.finditer(r"^---\n", output, re.MULTILINE):
        if found.start() > start:
            yield output[start:found.start()]
        start = found.end()
    if output[start:].strip():
        yield output[start:]


@dataclass(frozen=True)
class Part:
    """What the name-reference check reads of one overlay's part."""

    names: tuple[str, ...]  # the resources' names
    references: tuple[str, ...]  # values at name-reference field paths
    namespaced: bool  # a name-reference mapping with a namespace


def part_of(documents: list[Any]) -> Part:
    names: list[str] = []
    references: list[str] = []
    namespaced = False
    for document in documents:
        if not isinstance(document, dict):
            continue
        metadata = document.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
            names.append(metadata["name"])
        for fields in _REFERENCE_FIELDS:
            for value in _at(document, fields):
                if isinstance(value, dict):
                    namespaced = namespaced or "namespace" in value
                    value = value.get("name")
                if value is not None:
                    references.append(str(value))
    return Part(tuple(names), tuple(references), namespaced)


def _at(node: Any, segments: tuple[str, ...]) -> Iterator[Any]:
    """The values at a field path, lists walked through as kustomize's field specs do."""
    if isinstance(node, list):
        for item in node:
            yield from _at(item, segments)
        return
    if not segments:
        if node is not None:
            yield node
        return
    if isinstance(node, dict) and segments[0] in node:
        yield from _at(node[segments[0]], segments[1:])


def isolated(parts: list[Part]) -> list[bool]:
    """Whether each part is what its overlay's own build prints: none of its name-reference
    values is part of another part's resource name, and none is a namespaced mapping."""
    joined = ""
    owners: list[tuple[int, int]] = []  # (end offset in `joined`, part)
    for index, part in enumerate(parts):
        for name in part.names:
            joined += name + "\0"
            owners.append((len(joined), index))
    ends = [end for end, _ in owners]
    found: list[bool] = []
    for index, part in enumerate(parts):
        found.append(not part.namespaced and not any(
            _in_other(joined, ends, owners, reference, index) for reference in part.references))
    return found


def _in_other(joined: str, ends: list[int], owners: list[tuple[int, int]], value: str,
              index: int) -> bool:
    if not value or "\0" in value:
        return True
    start = joined.find(value)
    while start >= 0:
        owner = owners[bisect.bisect_right(ends, start)][1]
        if owner != index:
            return True
        start = joined.find(value, start + 1)
    return False
