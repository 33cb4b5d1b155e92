"""The objects that tell a cluster what to sync, read from a repository's YAML (pure).

Argo CD ``Application``s and ``ApplicationSet``s, Flux ``Kustomization``s, ``HelmRelease``s and
the ``GitRepository``s they name. Each source of one is a ``Follow``: the repository and
revision it follows, the folder (or chart) in it, and the settings the controller renders
that folder with (Helm value files, inline values and parameters, release name; Kustomize
images, patches, prefixes; a directory's recursion). What Conveyor cannot follow — a plugin,
Jsonnet, a values file from another source, Flux's post-build substitution or values from the
cluster — is a problem of the follow, said where it matters. ``ApplicationSet`` templates are
expanded by `appsets.py`; which follow reaches which environment, and what renders it, is
`pointers.py`'s.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.domain.images import parse_image_ref
from bot.render.targets import option_text
from bot.yamlread.data import DataBuilder
from bot.yamlread.nodes import MAX_NODES, YamlError, parse

ARGOCD_GROUP = "argoproj.io"
FLUX_KUSTOMIZE = "kustomize.toolkit.fluxcd.io"
FLUX_HELM = "helm.toolkit.fluxcd.io"
FLUX_SOURCE = "source.toolkit.fluxcd.io"
SYNC_KINDS = {(ARGOCD_GROUP, "Application"), (ARGOCD_GROUP, "ApplicationSet"),
              (FLUX_KUSTOMIZE, "Kustomization"), (FLUX_HELM, "HelmRelease"),
              (FLUX_SOURCE, "GitRepository")}
# Words a file must hold to be worth parsing for sync objects.
MARKERS = (ARGOCD_GROUP, "toolkit.fluxcd.io")
# The Kustomize settings of Argo CD and Flux that Conveyor applies over an overlay.
KUSTOMIZE_OPTIONS = ("images", "patches", "namePrefix", "nameSuffix", "namespace",
                     "commonLabels", "commonAnnotations", "components", "replicas")
ARGO_KUSTOMIZE_IGNORED = ("version", "forceCommonLabels", "forceCommonAnnotations",
                          "commonAnnotationsEnvsubst", "labelWithoutSelector",
                          "labelIncludeTemplates", "apiVersions", "kubeVersion")
ARGO_HELM_IGNORED = ("ignoreMissingValueFiles", "skipCrds", "skipSchemaValidation",
                     "skipTests", "passCredentials", "version", "apiVersions", "kubeVersion",
                     "namespace")


@dataclass(frozen=True)
class Follow:
    """What one source of a sync object follows, as written; ``base`` is the folder its
    relative Helm value files are read from (Argo CD: the source's path; Flux: the
    repository's root)."""

    url: str
    revision: str
    path: str | None  # a folder of the source repository; None for a Helm repository's chart
    chart: str | None = None  # a chart of a Helm (or OCI) repository, never fetched
    tool: str = "auto"  # "auto" | "kustomize" | "helm" | "directory"
    value_files: tuple[str, ...] = ()
    base: str = ""
    inline: str | None = None
    parameters: tuple[tuple[str, str, bool], ...] = ()
    release: str | None = None
    namespace: str | None = None
    replace_defaults: bool = False
    options: str = ""
    recurse: bool = False
    refs: tuple[tuple[str, str, str], ...] = ()  # Argo CD `ref` sources: (name, url, revision)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class SyncObject:
    """One Argo CD or Flux object of a file, with what each of its sources follows."""

    kind: str
    name: str
    namespace: str
    file: str
    follows: tuple[tuple[str, Follow], ...] = ()  # ("", …) for one source; a generated name
    source_ref: tuple[str, str, str] | None = None  # Flux: (kind, name, namespace)
    spec: str = ""  # canonical JSON of the object's spec: what a change compares
    problems: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    def describe(self) -> str:
        return f"the {_KIND_NAMES.get(self.kind, self.kind)} `{self.name}` in `{self.file}`"


_KIND_NAMES = {"Application": "Argo CD Application", "ApplicationSet": "Argo CD ApplicationSet",
               "Kustomization": "Flux Kustomization", "HelmRelease": "Flux HelmRelease",
               "GitRepository": "Flux GitRepository"}


def may_hold_syncs(text: str) -> bool:
    return any(marker in text for marker in MARKERS)


def sync_objects(path: str, text: str) -> list[SyncObject]:
    """The sync objects of one file (documents that are not YAML or not such objects are
    skipped: the config check reports what does not parse)."""
    if not may_hold_syncs(text):
        return []
    try:
        stream = parse(text)
    except YamlError:
        return []
    found = []
    for document in stream.documents:
        data = DataBuilder(MAX_NODES).build(document.root)
        if isinstance(data, dict):
            read = _object(path, data)
            if read is not None:
                found.append(read)
    return found


def _object(path: str, data: Mapping[str, Any]) -> SyncObject | None:
    group = str(data.get("apiVersion") or "").partition("/")[0]
    kind = data.get("kind")
    if (group, kind) not in SYNC_KINDS:
        return None
    metadata = _map(data.get("metadata"))
    spec = _map(data.get("spec"))
    name, namespace = str(metadata.get("name") or ""), str(metadata.get("namespace") or "")
    canonical = json.dumps(spec, sort_keys=True, default=str)
    common: dict[str, Any] = {"kind": str(kind), "name": name, "namespace": namespace,
                              "file": path, "spec": canonical, "raw": data}
    if kind == "Application":
        return SyncObject(**common, follows=tuple(argo_follows(spec, name)))
    if kind == "ApplicationSet":
        return SyncObject(**common)  # expanded by appsets.py
    if kind == "GitRepository":
        return SyncObject(**common)
    ref = _map(spec.get("sourceRef"))
    if kind == "HelmRelease":
        return _helm_release(common, spec, name, namespace)
    return SyncObject(**common, follows=(("", _flux_kustomization(spec)),),
                      source_ref=_source_ref(ref, namespace))


def _source_ref(ref: Mapping[str, Any], namespace: str) -> tuple[str, str, str] | None:
    if not ref:
        return None
    return (str(ref.get("kind") or ""), str(ref.get("name") or ""),
            str(ref.get("namespace") or namespace))


def argo_follows(spec: Mapping[str, Any], name: str) -> Iterator[tuple[str, Follow]]:
    """The follows of an Application's ``spec`` (``source`` or ``sources``); a source that
    only provides ``ref`` for value files follows nothing itself."""
    destination = _map(spec.get("destination"))
    namespace = str(destination.get("namespace") or "") or None
    sources = spec.get("sources")
    if isinstance(sources, list) and sources:
        refs = tuple((str(s["ref"]), str(s.get("repoURL") or ""),
                      str(s.get("targetRevision") or "")) for s in sources
                     if isinstance(s, dict) and s.get("ref"))
        for position, source in enumerate(sources, start=1):
            if isinstance(source, dict) and (source.get("path") is not None
                                             or source.get("chart") is not None):
                yield f"source {position}", _argo_source(source, name, namespace, refs)
        return
    yield "", _argo_source(_map(spec.get("source")), name, namespace, ())


def _argo_source(source: Mapping[str, Any], name: str, namespace: str | None,
                 refs: tuple[tuple[str, str, str], ...]) -> Follow:
    problems: list[str] = []
    path = source.get("path")
    folder = _folder(str(path)) if path is not None else None
    chart = str(source["chart"]) if source.get("chart") and path is None else None
    helm, kustomize, directory = (_map(source.get(key)) for key in ("helm", "kustomize",
                                                                     "directory"))
    tool = "auto"
    for key, value in (("helm", helm), ("kustomize", kustomize), ("directory", directory)):
        if value:
            tool = key
    if source.get("plugin") is not None:
        problems.append("it renders with a config management plugin, which Conveyor does not "
                        "run")
    if directory.get("jsonnet"):
        problems.append("it renders Jsonnet, which Conveyor does not run")
    inline = None
    if isinstance(helm.get("valuesObject"), dict):
        inline = json.dumps(helm["valuesObject"], sort_keys=True)
    elif isinstance(helm.get("values"), str) and helm["values"].strip():
        inline = str(helm["values"])
    elif isinstance(helm.get("values"), dict):
        inline = json.dumps(helm["values"], sort_keys=True)
    if helm.get("fileParameters"):
        problems.append("it sets Helm `fileParameters`, which Conveyor does not read")
    parameters = tuple((str(p.get("name")), str(p.get("value", "")), bool(p.get("forceString")))
                       for p in helm.get("parameters") or [] if isinstance(p, dict))
    problems += [f"it sets `helm.{key}`, which Conveyor does not apply"
                 for key in helm if key not in ("valueFiles", "values", "valuesObject",
                                                "parameters", "fileParameters", "releaseName",
                                                *ARGO_HELM_IGNORED)]
    problems += [f"it sets `kustomize.{key}`, which Conveyor does not apply"
                 for key in kustomize if key not in (*KUSTOMIZE_OPTIONS, *ARGO_KUSTOMIZE_IGNORED)]
    options = {key: kustomize.get(key) for key in KUSTOMIZE_OPTIONS}
    options["images"] = [_argo_image(image) for image in kustomize.get("images") or []]
    options["components"] = [c for c in (_join(folder or "", str(component))
                                         for component in kustomize.get("components") or [])
                             if c is not None]
    return Follow(
        url=str(source.get("repoURL") or ""), revision=str(source.get("targetRevision") or ""),
        path=folder, chart=chart, tool=tool,
        value_files=tuple(str(v) for v in helm.get("valueFiles") or []), base=folder or "",
        inline=inline, parameters=parameters,
        release=str(helm.get("releaseName") or "") or name, namespace=namespace,
        options=option_text(options), recurse=bool(directory.get("recurse")), refs=refs,
        problems=tuple(problems))


def _argo_image(entry: Any) -> dict[str, str]:
    """An Argo CD ``kustomize.images`` string (``name[=newname][:tag][@digest]``) as the
    Kustomize ``images`` entry ``kustomize edit set image`` writes."""
    original, equals, target = str(entry).partition("=")
    if not equals:
        original, target = "", original
    try:
        ref = parse_image_ref(target)
    except ValueError:
        return {"name": str(entry)}  # kustomize refuses it, and the render fails with that
    found = {"name": original or ref.name}
    if original:
        found["newName"] = ref.name
    if ref.tag:
        found["newTag"] = ref.tag
    if ref.digest:
        found["digest"] = ref.digest
    return found


def _flux_kustomization(spec: Mapping[str, Any]) -> Follow:
    problems = []
    post_build = _map(spec.get("postBuild"))
    if post_build.get("substitute") or post_build.get("substituteFrom"):
        problems.append("it substitutes variables after the build (`postBuild`), which "
                        "Conveyor does not apply")
    options = {key: spec.get(key) for key in ("images", "patches", "namePrefix", "nameSuffix",
                                              "components")}
    options["namespace"] = spec.get("targetNamespace")
    path = _folder(str(spec.get("path") or "./"))
    options["components"] = [c for c in (_join(path, str(component))
                                         for component in spec.get("components") or [])
                             if c is not None]
    # Without a kustomization in the folder, Flux builds every manifest below it.
    return Follow(url="", revision="", path=path, recurse=True,
                  options=option_text(options), problems=tuple(problems))


def _helm_release(common: dict[str, Any], spec: Mapping[str, Any], name: str,
                  namespace: str) -> SyncObject:
    chart_spec = _map(_map(spec.get("chart")).get("spec"))
    problems = []
    if spec.get("chartRef") is not None:
        problems.append("its chart comes from `chartRef` (an OCI repository or a HelmChart), "
                        "not a folder of this repository")
    if spec.get("valuesFrom"):
        problems.append("it takes values from the cluster (`valuesFrom`), which Conveyor "
                        "cannot read")
    if spec.get("postRenderers"):
        problems.append("it post-renders the chart (`postRenderers`), which Conveyor does not "
                        "apply")
    target_namespace = str(spec.get("targetNamespace") or "")
    release = str(spec.get("releaseName") or "") or (
        f"{target_namespace}-{name}" if target_namespace else name)
    values = spec.get("values")
    files = chart_spec.get("valuesFiles") or ([chart_spec["valuesFile"]]
                                              if chart_spec.get("valuesFile") else [])
    follow = Follow(
        url="", revision="", path=_folder(str(chart_spec.get("chart") or "")), tool="helm",
        value_files=tuple(str(v) for v in files), base="",
        inline=json.dumps(values, sort_keys=True) if isinstance(values, dict) and values
        else None, release=release, namespace=target_namespace or namespace or None,
        replace_defaults=bool(files), problems=tuple(problems))
    ref = _map(chart_spec.get("sourceRef"))
    return SyncObject(**common, follows=(("", follow),), source_ref=_source_ref(ref, namespace))


def git_repository(obj: SyncObject) -> tuple[str, str]:
    """A Flux GitRepository's (url, revision): the branch it follows, else a tag, a semver
    range, a commit or a ref name, written as such; Flux follows ``master`` without a ref."""
    spec = _map(obj.raw.get("spec"))
    ref = _map(spec.get("ref"))
    url = str(spec.get("url") or "")
    for key in ("branch", "tag", "semver", "commit", "name"):
        if ref.get(key):
            return url, str(ref[key]) if key == "branch" else f"{key} {ref[key]}"
    return url, "master"


def _folder(path: str) -> str:
    normal = posixpath.normpath(path.strip().lstrip("/")) if path.strip() else "."
    return "" if normal in (".", "") else normal


def _join(folder: str, entry: str) -> str | None:
    joined = posixpath.normpath(posixpath.join(folder, entry)) if folder else (
        posixpath.normpath(entry))
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith(("../", "/")):
        return None
    return joined


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
