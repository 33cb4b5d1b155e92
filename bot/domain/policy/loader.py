"""Parsing and validation of ``.github/conveyor.yml``."""

from __future__ import annotations

import os
import re
from types import MappingProxyType
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from bot.domain.policy.environments import parse_environments
from bot.domain.policy.issues import PolicyError, PolicyIssue
from bot.domain.policy.model import Policy
from bot.domain.policy.reader import ROOT, Reader
from bot.domain.policy.services import parse_allowed_images, parse_services
from bot.domain.tags import TagPolicy

DEFAULT_PATH = ".github/conveyor.yml"
MAX_FILE_BYTES = 256 * 1024
SUPPORTED_VERSION = 1
TOP_KEYS = ("version", "allowed_images", "services", "environments")
_DUPLICATE_RE = re.compile(r'found duplicate key "(?P<key>.*?)"')


def _mark_pos(mark: Any) -> tuple[int, int]:
    return (int(mark.line) + 1, int(mark.column) + 1)


def _first_definition(text: str, exc: DuplicateKeyError, key: str) -> int | None:
    """The line of the first ``key:`` in the mapping ruamel reports (it marks the mapping's
    start, not the first key)."""
    if exc.context_mark is None or exc.problem_mark is None:
        return None
    lines = text.splitlines()
    column = exc.problem_mark.column
    for number in range(exc.context_mark.line, min(exc.problem_mark.line, len(lines))):
        line = lines[number]
        if line[column:].startswith((f"{key}:", f'"{key}":', f"'{key}':")) and (
            not line[:column].strip() or line[:column].strip() == "-"
        ):
            return number + 1
    return None


def _parse_yaml(reader: Reader, text: str) -> Any:
    yaml = YAML(typ="rt")
    try:
        return yaml.load(text)
    except DuplicateKeyError as exc:
        match = _DUPLICATE_RE.search(str(exc.problem))
        key = match["key"] if match else "?"
        first = _first_definition(text, exc, key)
        where = f" (first defined at line {first})" if first else ""
        reader.error(_mark_pos(exc.problem_mark), f"duplicate key '{key}'{where}")
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        reader.error(_mark_pos(mark) if mark else ROOT, f"invalid YAML: {problem}")
    except YAMLError as exc:
        reader.error(ROOT, f"invalid YAML: {exc}")
    return None


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
    root = _parse_yaml(reader, text)
    if reader.issues:
        return None
    if not isinstance(root, dict):
        reader.error(
            reader.node_pos(root),
            "the policy must be a mapping with the keys version, allowed_images, services "
            "and environments",
        )
        return None
    reader.check_keys(root, TOP_KEYS, "")
    reader.require(root, TOP_KEYS, "", ROOT)
    if "version" in root:
        _version(reader, root)
    tag_cache: dict[str, TagPolicy] = {}
    allowed = parse_allowed_images(reader, root) if "allowed_images" in root else ()
    allowed_ok = bool(allowed) and len(allowed) == len(root.get("allowed_images") or ())
    environments = parse_environments(reader, root, tag_cache) if "environments" in root else {}
    services = (
        parse_services(reader, root, allowed if allowed_ok else None, list(environments), tag_cache)
        if "services" in root
        else {}
    )
    if reader.issues:
        return None
    return Policy(
        version=SUPPORTED_VERSION,
        allowed_images=allowed,
        services=MappingProxyType(services),
        environments=MappingProxyType(environments),
    )


def load_policy(text: str, path: str = DEFAULT_PATH) -> Policy:
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
