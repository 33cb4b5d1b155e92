"""jsonschema errors told as one line a person can act on, on the line that holds them."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from bot.configcheck.documents import parse_documents
from bot.configcheck.messages import describe, where

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "replicas": {"type": ["integer", "null"]},
        "count": {"type": "integer", "minimum": 1},
        "policy": {"enum": ["Always", "IfNotPresent", None]},
        "port": {"oneOf": [{"type": "integer", "minimum": 1},
                           {"type": "string", "pattern": "^[a-z]+$"}]},
        "spec": {"type": "object", "required": ["name"],
                 "properties": {"name": {"type": "string"}}},
    },
}


def messages(text: str) -> list[tuple[int, str]]:
    parsed = parse_documents(text)
    assert parsed.ok
    doc = parsed.documents[0]
    found: list[tuple[int, str]] = []
    for error in sorted(Draft202012Validator(SCHEMA).iter_errors(doc.data),
                        key=lambda e: list(e.absolute_path)):
        found.extend(describe(error, doc))
    return found


def test_paths_read_as_in_a_manifest() -> None:
    assert where(("spec", "containers", 0, "image")) == "spec.containers[0].image"
    assert where(()) == ""
    assert where((0, "name")) == "[0].name"


def test_an_enum_lists_its_choices_without_null() -> None:
    assert messages("policy: Sometimes\n") == [
        (1, "policy: must be one of Always, IfNotPresent, not 'Sometimes'")]


def test_a_nullable_type_names_the_type_and_what_was_found() -> None:
    assert messages("replicas: three\n") == [
        (1, "replicas: expected integer, got string 'three'")]
    assert messages("spec:\n  name: null\n") == [(2, "spec.name: expected string, got null")]
    assert messages("spec:\n  name: 1.5\n") == [(2, "spec.name: expected string, got number")]
    assert messages("spec:\n  name: [a]\n") == [(2, "spec.name: expected string, got list")]


def test_one_of_is_told_by_its_best_matching_branch() -> None:
    # One line for the whole oneOf, told as jsonschema's best match tells it.
    assert messages("replicas: 1\nport: 0\n") == [(2, "port: expected string, got integer")]
    assert messages("port: HTTP\n") == [(1, "port: expected integer, got string 'HTTP'")]


def test_other_keywords_keep_the_message_of_jsonschema() -> None:
    assert messages("count: 0\n") == [(1, "count: 0 is less than the minimum of 1")]
    assert messages("- 1\n") == [(1, "the document: expected object, got list")]


def test_a_missing_field_is_reported_on_its_parent() -> None:
    assert messages("\nspec:\n  other: 1\n") == [(2, "spec: missing required field 'name'")]
