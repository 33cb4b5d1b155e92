"""Parsing and validation of ``.github/conveyor.yml``."""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Any

from bot.domain.policy.environments import parse_environments
from bot.domain.policy.groups import parse_groups
from bot.domain.policy.issues import PolicyError, PolicyIssue
from bot.domain.policy.kubernetes import latest_kubernetes_version, parse_kubernetes_version
from bot.domain.policy.model import Policy
from bot.domain.policy.reader import ROOT, Reader
from bot.domain.policy.services import parse_allowed_images, parse_services
from bot.domain.policy.yamltree import compose
from bot.domain.tags import TagPolicy
from bot.names import POLICY_PATH

MAX_FILE_BYTES = 256 * 1024
SUPPORTED_VERSION = 1
REQUIRED_KEYS = ("version", "allowed_images", "services", "environments")
TOP_KEYS = (*REQUIRED_KEYS, "kubernetes_version", "groups")


def _version(reader: Reader, root: dict[Any, Any]) -> None:
    value = root["version"]
    if isinstance(value, bool) or not isinstance(value, int) or value != SUPPORTED_VERSION:
        reader.error(
            reader.value_pos(root, "version"),
            f"version: must be {SUPPORTED_VERSION}, not {value!r}",
        )


def _validate(reader: Reader, text: str) -> Policy | None:
    if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        reader.error(ROOT, f"the policy file is larger than {MAX_FILE_BYTES // 1024} KiB")
        return None
    root, problems = compose(text)
    for problem in problems:
        reader.error(problem.pos, problem.message)
    if any(problem.fatal for problem in problems):
        return None
    if not isinstance(root, dict):
        reader.error(
            reader.node_pos(root),
            "the policy must be a mapping with the keys version, allowed_images, services "
            "and environments",
        )
        return None
    reader.check_keys(root, TOP_KEYS, "")
    reader.require(root, REQUIRED_KEYS, "", ROOT)
    if "version" in root:
        _version(reader, root)
    kubernetes_version = (
        parse_kubernetes_version(reader, root)
        if "kubernetes_version" in root
        else latest_kubernetes_version()
    )
    tag_cache: dict[str, TagPolicy] = {}
    allowed = parse_allowed_images(reader, root) if "allowed_images" in root else ()
    environments = parse_environments(reader, root, tag_cache) if "environments" in root else {}
    services = (
        parse_services(reader, root, allowed or None, environments, tag_cache)
        if "services" in root
        else {}
    )
    # membership is checked against the services only when there are some to check against
    groups = parse_groups(reader, root, services) if "groups" in root and services else {}
    if reader.issues:
        return None
    return Policy(
        version=SUPPORTED_VERSION,
        allowed_images=allowed,
        services=MappingProxyType(services),
        environments=MappingProxyType(environments),
        kubernetes_version=kubernetes_version,
        groups=MappingProxyType(groups),
        notices=tuple(sorted(reader.notices)),
    )


def load_policy(text: str, path: str = POLICY_PATH) -> Policy:
    """Parse and validate a policy; raises PolicyError listing every problem found."""
    reader = Reader(path)
    policy = _validate(reader, text)
    if policy is None or reader.issues:
        raise PolicyError(sorted(reader.issues))
    return policy


def check_config_file(file_path: str) -> tuple[Policy | None, list[PolicyIssue]]:
    """Validate a policy file on disk, for ``python -m bot check-config FILE``."""
    try:
        with open(file_path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return None, [PolicyIssue(file_path, 1, 1, f"cannot read the file: {reason}")]
    if len(data) > MAX_FILE_BYTES:
        message = f"the policy file is larger than {MAX_FILE_BYTES // 1024} KiB"
        return None, [PolicyIssue(file_path, 1, 1, message)]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        return None, [PolicyIssue(file_path, line, column, "the file is not valid UTF-8")]
    try:
        return load_policy(text, os.fspath(file_path)), []
    except PolicyError as exc:
        return None, exc.issues
