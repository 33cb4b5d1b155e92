"""Golden cases: each directory holds input.yaml, edit.json and expected.yaml or error.txt.

Outputs are compared byte for byte (files are read and written as bytes, so CRLF and missing
final newlines are part of the expectation). error.txt holds the exception class name and
``str(error)`` on two lines. An optional notes.txt holds the edit's notes, one per line (an
empty file: no notes). edit.json holds the arguments of ``promote_image``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.manifests import ManifestError, find_images, promote_image
from bot.manifests.charts import VERSION_ONLY_SHAPES

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def _load(case: str) -> tuple[str, dict[str, Any]]:
    directory = GOLDEN / case
    text = (directory / "input.yaml").read_bytes().decode("utf-8")
    edit = json.loads((directory / "edit.json").read_text())
    return text, edit


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    text, edit = _load(case)
    directory = GOLDEN / case
    path = f"{case}/input.yaml"
    expected = directory / "expected.yaml"
    if expected.exists():
        result = promote_image(text, path=path, **edit)
        assert result.new_text.encode("utf-8") == expected.read_bytes()
        assert result.old_text == text
        assert result.occurrences
        notes = directory / "notes.txt"
        if notes.exists():
            assert list(result.notes) == notes.read_text().splitlines()
    else:
        kind, message = (directory / "error.txt").read_text().splitlines()
        with pytest.raises(ManifestError) as caught:
            promote_image(text, path=path, **edit)
        assert type(caught.value).__name__ == kind
        assert str(caught.value) == message
        assert caught.value.path == path
        assert message.startswith(f"{path}:{caught.value.line}: {caught.value.message}")


@pytest.mark.parametrize("case", [c for c in CASES if (GOLDEN / c / "expected.yaml").exists()])
def test_golden_is_idempotent(case: str) -> None:
    text, edit = _load(case)
    once = promote_image(text, **edit).new_text
    twice = promote_image(once, **edit)
    assert twice.new_text == once
    assert twice.changed_lines == ()


@pytest.mark.parametrize("case", [c for c in CASES if (GOLDEN / c / "expected.yaml").exists()])
def test_golden_result_is_found_with_the_new_digest(case: str) -> None:
    text, edit = _load(case)
    new_text = promote_image(text, **edit).new_text
    found = find_images(new_text, edit["image"], tag_key=edit.get("tag_key"))
    assert found
    assert all(o.digest == edit["digest"]
               or (o.shape in VERSION_ONLY_SHAPES and o.digest is None) for o in found)
    if edit["tag"] is not None:
        assert all(o.tag == edit["tag"] for o in found)
