"""Helm values files against their chart's ``values.schema.json``.

Helm validates the values it renders with: the chart's own ``values.yaml`` with the file's
values laid over it. The check does the same, so an environment file that sets only a few
keys is not blamed for the keys the chart's defaults provide.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from bot.configcheck.documents import Document
from bot.configcheck.messages import describe

SCHEMA_NAME = "values.schema.json"
DEFAULTS_NAME = "values.yaml"
MAX_ERRORS = 20


def is_values_file(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return "values" in name and name.endswith((".yaml", ".yml"))


def chart_directories(path: str) -> list[str]:
    """Where a values file's chart may be: its own directory, then the parent."""
    directory = posixpath.dirname(path)
    candidates = [directory]
    if directory:
        candidates.append(posixpath.dirname(directory))
    return candidates


def coalesce(defaults: Any, override: Any) -> Any:
    """``override`` laid over ``defaults`` as Helm does: maps merge, a null removes the key."""
    if not isinstance(defaults, dict) or not isinstance(override, dict):
        return override
    merged = dict(defaults)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = coalesce(merged.get(key), value)
    return merged


def load_schema(text: str) -> tuple[dict[str, Any] | None, tuple[int, str] | None]:
    """The schema, or (line, problem) when it is not a JSON object."""
    try:
        schema = json.loads(text)
    except ValueError as exc:
        return None, (getattr(exc, "lineno", 1), f"{SCHEMA_NAME} is not valid JSON: {exc}")
    if not isinstance(schema, dict):
        return None, (1, f"{SCHEMA_NAME} must hold a JSON object")
    return schema, None


def schema_findings(schema: dict[str, Any], schema_path: str, values: Document,
                    defaults: Any = None) -> list[tuple[int, str]]:
    """Every place where the values (over the chart's defaults) break the schema."""
    from jsonschema import Draft7Validator, validators  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped,unused-ignore]

    cls = validators.validator_for(schema, default=Draft7Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        return [(values.line, f"{schema_path} is not a valid JSON schema: {exc.message}")]
    data = values.data if defaults is None else coalesce(defaults, values.data)
    findings: list[tuple[int, str]] = []
    for error in cls(schema).iter_errors(data):
        findings += [(line, f"{message} (schema {schema_path})")
                     for line, message in describe(error, values)]
        if len(findings) >= MAX_ERRORS:
            break
    return sorted(findings)[:MAX_ERRORS]
