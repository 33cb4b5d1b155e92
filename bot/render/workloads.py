"""The images every workload of a build runs, and how two builds differ in them (pure).

A workload is any resource with a pod template, whatever its kind (Deployments, StatefulSets,
DaemonSets, Jobs, CronJobs, Pods, Argo Rollouts, Knative Services…): every mapping below a
resource that holds a ``containers`` list is read as a pod spec, with its ``containers``,
``initContainers``, ``ephemeralContainers`` and image volumes (``volumes[].image.reference``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from bot.render.diff import Resources, resources_of

CONTAINER_LISTS = (("containers", "container"), ("initContainers", "init container"),
                   ("ephemeralContainers", "ephemeral container"))


class UnreadableBuild(Exception):
    """The build's output is not YAML (never expected of kustomize)."""


@dataclass(frozen=True, order=True)
class Slot:
    """Where one image runs: a container (or image volume) of one resource."""

    kind: str
    namespace: str
    name: str
    place: str  # "container web", "init container migrate", "image volume models"

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}, {self.place}"


@dataclass(frozen=True)
class WorkloadChange:
    """One slot whose image a change sets: ``old`` None when the slot is new."""

    slot: Slot
    old: str | None
    new: str

    def __str__(self) -> str:
        return f"{self.slot}: {self.old or '(new)'} → {self.new}"


def read_output(output: str) -> tuple[dict[Slot, str], Resources]:
    """Every slot of a render's output with the image it runs, and its resources for the
    diff."""
    return read_documents(_documents(output))


def read_documents(documents: list[Any]) -> tuple[dict[Slot, str], Resources]:
    """``read_output`` of documents already parsed (``YAML(typ="safe")``)."""
    return _images(documents), resources_of(documents)


def workload_images(output: str) -> dict[Slot, str]:
    """Every slot of the build's output with the image it runs."""
    return _images(_documents(output))


def _documents(output: str) -> list[Any]:
    try:
        return list(YAML(typ="safe").load_all(output))
    except YAMLError as exc:
        raise UnreadableBuild(f"the render's output is not YAML: {_one_line(exc)}") from None


def _one_line(exc: YAMLError) -> str:
    """The parser's problem and where it is, on one line: its own text spans two or more."""
    if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return str(exc).partition("\n")[0]


def _images(documents: list[Any]) -> dict[Slot, str]:
    found: dict[Slot, str] = {}
    for document in documents:
        if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
            continue
        metadata = document.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        kind, name = document["kind"], str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or "")
        specs = list(_pod_specs(document))
        for path, spec in specs:
            suffix = f" ({path})" if len(specs) > 1 else ""
            for place, image in _images_of(spec):
                found[Slot(kind, namespace, name, place + suffix)] = image
    return found


def image_changes(before: dict[Slot, str], after: dict[Slot, str]) -> list[WorkloadChange]:
    """The slots of ``after`` whose image differs from ``before`` (or that are new)."""
    return [WorkloadChange(slot, before.get(slot), image)
            for slot, image in sorted(after.items()) if before.get(slot) != image]


def _pod_specs(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(path, spec)`` of every mapping holding a ``containers`` list; each shared value is
    visited once, so an alias-heavy document costs no more than its size."""
    seen: set[int] = set()
    pending: list[tuple[str, Any]] = [("", document)]
    while pending:
        path, value = pending.pop()
        if not isinstance(value, dict | list) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, list):
            pending.extend((f"{path}[{i}]", item) for i, item in reversed(list(
                enumerate(value))))
            continue
        if isinstance(value.get("containers"), list):
            yield path.lstrip(".") or ".", value
            continue
        pending.extend((f"{path}.{key}", item) for key, item in reversed(list(value.items())))


def _images_of(spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for field, what in CONTAINER_LISTS:
        for container in spec.get(field) or []:
            if isinstance(container, dict) and isinstance(container.get("image"), str):
                yield f"{what} {container.get('name') or '?'}", container["image"]
    for volume in spec.get("volumes") or []:
        image = volume.get("image") if isinstance(volume, dict) else None
        if isinstance(image, dict) and isinstance(image.get("reference"), str):
            yield f"image volume {volume.get('name') or '?'}", image["reference"]
