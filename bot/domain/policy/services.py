"""Validation of ``allowed_images`` and the ``services`` mapping."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

from bot.domain.attestation import SignerWorkflow, parse_signer_workflow
from bot.domain.images import image_allowed
from bot.domain.policy.fields import check_template, parse_tags, suggest
from bot.domain.policy.model import Environment, Service
from bot.domain.policy.reader import Reader, type_name
from bot.domain.policy.syntax import (
    fill_template,
    image_prefix_problem,
    image_problem,
    name_problem,
    repository_problem,
)
from bot.domain.tags import DEFAULT_TAG_POLICY, TagPolicy

MAX_SERVICES = 2000
MAX_ALLOWED_IMAGES = 100
SERVICE_KEYS = ("image", "chart", "source", "tags", "paths", "tag_key", "signer_workflow")
# a Helm values key such as `version` or `imageTag`; not one of the image's other parts
TAG_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,62}")
NOT_TAG_KEYS = frozenset({"repository", "registry", "digest", "name", "reference"})


def parse_allowed_images(reader: Reader, root: dict[Any, Any]) -> tuple[str, ...]:
    seq = reader.typed(root, "allowed_images", list, "a list of image prefixes", "")
    if seq is None:
        return ()
    if not seq or len(seq) > MAX_ALLOWED_IMAGES:
        reader.error(
            reader.value_pos(root, "allowed_images"),
            f"allowed_images: list 1 to {MAX_ALLOWED_IMAGES} image prefixes, such as "
            '"ghcr.io/acme/"',
        )
        return ()
    prefixes: list[str] = []
    for index, item in enumerate(seq):
        pos = reader.item_pos(seq, index)
        if not isinstance(item, str):
            reader.error(pos, f"allowed_images[{index}]: expected a string, got {type_name(item)}")
            continue
        problem = image_prefix_problem(item)
        if problem is not None:
            reader.error(pos, f"allowed_images[{index}]: {problem}")
            continue
        prefixes.append(str(item))
    return tuple(prefixes)


class _ServiceParser:
    def __init__(
        self,
        reader: Reader,
        allowed: tuple[str, ...] | None,
        environments: dict[str, Environment],
        tag_cache: dict[str, TagPolicy],
    ) -> None:
        self.reader = reader
        self.allowed = allowed  # None when allowed_images has no valid prefix
        self.env_names = list(environments)
        self.tag_cache = tag_cache
        self.environments = environments
        self.images: dict[str, str] = {}

    def parse(self, name: str, raw: dict[Any, Any], line: int) -> Service:
        reader, where = self.reader, f"services.{name}"
        reader.check_keys(raw, SERVICE_KEYS, where)
        reader.require(raw, ("source",), where, reader.node_pos(raw))
        kind = self._kind(raw, where)
        image = self._image(raw, where, name, kind) if kind in raw else ""
        source = ""
        if "source" in raw:
            value = reader.typed(raw, "source", str, "a repository as owner/repo", where)
            problem = repository_problem(value) if value is not None else None
            if problem is not None:
                reader.error(reader.value_pos(raw, "source"), f"{where}.source: {problem}")
            source = str(value or "")
        tags = DEFAULT_TAG_POLICY
        if "tags" in raw:
            tags = parse_tags(reader, raw, where, self.tag_cache) or DEFAULT_TAG_POLICY
        return Service(
            name=name,
            image=image,
            source=source,
            tags=tags,
            paths=self._paths(raw, where) if "paths" in raw else MappingProxyType({}),
            line=line,
            tag_key=self._tag_key(raw, where) if "tag_key" in raw and kind == "image" else None,
            kind=kind,
            signer_workflow=self._signer(raw, where, source),
        )

    def _kind(self, raw: dict[Any, Any], where: str) -> str:
        """``image`` or ``chart``: exactly one of the two keys names what the service ships."""
        reader = self.reader
        if "image" in raw and "chart" in raw:
            reader.error(reader.key_pos(raw, "chart"),
                         f"{where}.chart: a service ships an image or a Helm chart, not both; "
                         "keep one of image and chart")
        elif "image" not in raw and "chart" not in raw:
            reader.error(reader.node_pos(raw),
                         f"{where}: missing required key 'image' (or 'chart' for a Helm chart)")
        if "chart" in raw and "tag_key" in raw:
            reader.error(reader.key_pos(raw, "tag_key"),
                         f"{where}.tag_key: only applies to images; a chart's version is "
                         "written where the chart is named")
        return "chart" if "chart" in raw and "image" not in raw else "image"

    def _signer(self, raw: dict[Any, Any], where: str, source: str) -> SignerWorkflow | None:
        """`signer_workflow`; without one, a notice where an environment requires an
        attestation."""
        reader = self.reader
        if "signer_workflow" not in raw:
            requiring = [name for name, env in self.environments.items()
                         if env.require_attestation]
            if requiring and source:
                reader.notice(
                    reader.key_pos(raw, "source"),
                    f"{where}: {' and '.join(requiring[:3])} require"
                    f"{'s' if len(requiring) == 1 else ''} an attestation, and without "
                    f"signer_workflow one signed by any workflow of {source} counts (a pull "
                    "request's too); pin the release workflow, such as signer_workflow: "
                    ".github/workflows/release.yml")
            return None
        value = reader.typed(raw, "signer_workflow", str,
                             "a workflow file such as .github/workflows/release.yml", where)
        if value is None:
            return None
        parsed = parse_signer_workflow(value)
        if isinstance(parsed, str):
            reader.error(reader.value_pos(raw, "signer_workflow"),
                         f"{where}.signer_workflow: {parsed}")
            return None
        return parsed

    def _tag_key(self, raw: dict[Any, Any], where: str) -> str | None:
        reader = self.reader
        value = reader.typed(raw, "tag_key", str, "a Helm values key such as version", where)
        if value is None:
            return None
        if TAG_KEY_RE.fullmatch(value) is None or value in NOT_TAG_KEYS:
            reader.error(
                reader.value_pos(raw, "tag_key"),
                f"{where}.tag_key: '{value}' is not a key a chart reads the tag from; write the "
                "key beside repository in the values, such as version or imageTag",
            )
            return None
        return str(value)

    def _image(self, raw: dict[Any, Any], where: str, name: str, kind: str) -> str:
        reader = self.reader
        expected = ("an image name such as ghcr.io/acme/web" if kind == "image"
                    else "a chart such as ghcr.io/acme/charts/web")
        value = reader.typed(raw, kind, str, expected, where)
        if value is None:
            return ""
        pos = reader.value_pos(raw, kind)
        if kind == "chart" and value.lower().startswith("oci://"):
            reader.error(pos, f"{where}.chart: write the chart without oci://, such as "
                              f"{value[len('oci://'):]}")
            return str(value)
        problem = image_problem(value)
        if problem is not None:
            reader.error(pos, f"{where}.{kind}: {problem.replace('image', kind, 1)}")
            return str(value)
        if self.allowed is not None and not image_allowed(value, self.allowed):
            reader.error(
                pos,
                f"{where}.{kind}: '{value}' is not under any prefix of allowed_images "
                f"({', '.join(self.allowed) or 'none'}); add its prefix there or fix the name",
            )
        other = self.images.get(value.casefold())
        if other is not None:
            reader.error(pos, f"{where}.{kind}: '{value}' is already the {kind} of service "
                              f"'{other}'")
        else:
            self.images[value.casefold()] = name
        return str(value)

    def _paths(self, raw: dict[Any, Any], where: str) -> MappingProxyType[str, str]:
        reader = self.reader
        mapping = reader.typed(raw, "paths", dict, "a mapping of environment to path", where)
        if mapping is None:
            return MappingProxyType({})
        paths: dict[str, str] = {}
        for env, template in mapping.items():
            label = f"{where}.paths.{env}"
            if not isinstance(env, str) or env not in self.env_names:
                reader.error(
                    reader.key_pos(mapping, env),
                    f"{label}: unknown environment '{env}'" + suggest(str(env), self.env_names),
                )
                continue
            if not isinstance(template, str):
                reader.error(
                    reader.value_pos(mapping, env),
                    f"{label}: expected a path, got {type_name(template)}",
                )
                continue
            if check_template(reader, reader.value_pos(mapping, env), label, template):
                paths[env] = str(template)
        return MappingProxyType(paths)


def _check_distinct_files(
    reader: Reader,
    service: Service,
    raw: dict[Any, Any],
    environments: dict[str, Environment],
    env_nodes: dict[str, tuple[int, dict[Any, Any]]],
) -> None:
    """No two environments of one service may write the same file: a promotion into one would
    change the other too. The error points at the key that makes them collide: the later
    environment's override if it has one, else the earlier one's, else the later environment's
    own `path`."""
    owner: dict[str, str] = {}
    for env_name, env in environments.items():
        template = service.paths.get(env_name, env.path)
        if not template:
            continue
        path = fill_template(template, service.name, env_name)
        other = owner.setdefault(path, env_name)
        if other == env_name:
            continue
        detail = f"'{path}' is also the file of environment '{{}}'"
        advice = "each environment needs its own file"
        blamed = next((name for name in (env_name, other) if name in service.paths), None)
        if blamed is not None:
            mapping = raw["paths"]
            partner = other if blamed == env_name else env_name
            reader.error(reader.value_pos(mapping, blamed),
                         f"services.{service.name}.paths.{blamed}: "
                         f"{detail.format(partner)}; {advice}")
        elif env_name in env_nodes and not _same_template(env, environments[other]):
            index, node = env_nodes[env_name]
            reader.error(reader.value_pos(node, "path"),
                         f"environments[{index}].path: {detail.format(other)} for service "
                         f"'{service.name}'; {advice}")


def _same_template(first: Environment, second: Environment) -> bool:
    """Whether the environments collide for every service (reported with the environments)."""
    return (first.path.format(service="{service}", env=first.name)
            == second.path.format(service="{service}", env=second.name))


def _environment_nodes(root: dict[Any, Any]) -> dict[str, tuple[int, dict[Any, Any]]]:
    """Environment name → (index, its mapping in the file), for positions."""
    seq = root.get("environments")
    nodes: dict[str, tuple[int, dict[Any, Any]]] = {}
    for index, raw in enumerate(seq if isinstance(seq, list) else []):
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            nodes.setdefault(raw["name"], (index, raw))
    return nodes


def parse_services(
    reader: Reader,
    root: dict[Any, Any],
    allowed: tuple[str, ...] | None,
    environments: dict[str, Environment],
    tag_cache: dict[str, TagPolicy],
) -> dict[str, Service]:
    mapping = reader.typed(root, "services", dict, "a mapping of service name to settings", "")
    if mapping is None:
        return {}
    pos = reader.value_pos(root, "services")
    if not mapping:
        reader.error(pos, "services: define at least one service")
        return {}
    if len(mapping) > MAX_SERVICES:
        reader.error(
            pos, f"services: at most {MAX_SERVICES} services are supported, found {len(mapping)}"
        )
        return {}
    parser = _ServiceParser(reader, allowed, environments, tag_cache)
    env_nodes = _environment_nodes(root)
    services: dict[str, Service] = {}
    folded: dict[str, str] = {}
    for name, raw in mapping.items():
        key_pos = reader.key_pos(mapping, name)
        label = f"services.{name}"
        problem = name_problem(name, "service") if isinstance(name, str) else "keys must be strings"
        if problem is None and name.casefold() in folded:
            problem = f"duplicate service (differs from '{folded[name.casefold()]}' only in case)"
        if problem is not None:
            reader.error(key_pos, f"{label}: {problem}")
        elif isinstance(raw, dict):
            folded[name.casefold()] = name
        if not isinstance(raw, dict):
            reader.error(
                reader.value_pos(mapping, name),
                f"{label}: expected a mapping with image and source, got {type_name(raw)}",
            )
            continue
        # services with a bad name are still checked in full, but not kept
        service = parser.parse(str(name), raw, key_pos[0])
        if problem is None:
            services[str(name)] = service
            _check_distinct_files(reader, service, raw, environments, env_nodes)
    return services
