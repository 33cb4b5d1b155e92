"""jsonschema errors → a line and a sentence a person can act on."""

from __future__ import annotations

import difflib
import re
from typing import Any

from bot.configcheck.documents import Document, Path


def where(path: Path) -> str:
    """``("spec", "containers", 0, "image")`` → ``spec.containers[0].image``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def suggest(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "integer" if isinstance(value, int) else "number"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    return "list" if isinstance(value, list) else "mapping"


def describe(error: Any, doc: Document, prefix: Path = ()) -> list[tuple[int, str]]:
    """Readable (line, message) pairs for one jsonschema error."""
    path: Path = (*prefix, *error.absolute_path)
    label = where(path[len(prefix):]) or "the document"
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        known = list((error.schema.get("properties") or {}).keys())
        patterns = list((error.schema.get("patternProperties") or {}).keys())
        return [
            (doc.line_of((*path, extra)),
             f"unknown field '{extra}' in {label}" + suggest(str(extra), known))
            for extra in error.instance
            if extra not in known and not any(re.search(p, str(extra)) for p in patterns)
        ]
    if kind == "type":
        wanted = error.validator_value
        names = [wanted] if isinstance(wanted, str) else [t for t in wanted if t != "null"]
        return [(doc.line_of(path),
                 f"{label}: expected {' or '.join(names)}, got {_json_type(error.instance)}")]
    if kind == "required":
        instance = error.instance if isinstance(error.instance, dict) else {}
        missing = [str(key) for key in error.validator_value if key not in instance]
        return [(doc.line_of(path), f"{label}: missing required field '{key}'")
                for key in missing[:1]]
    if kind == "enum":
        choices = ", ".join(str(c) for c in error.validator_value if c is not None)
        return [(doc.line_of(path),
                 f"{label}: must be one of {choices}, not {error.instance!r}")]
    if kind in ("oneOf", "anyOf") and error.context:
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped,unused-ignore]

        return describe(best_match(error.context), doc, prefix)
    return [(doc.line_of(path), f"{label}: {error.message}")]
