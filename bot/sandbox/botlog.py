"""The bot's JSON log read back: the errors it logged, and why it skipped a promotion that
GitHub shows nothing of."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of the log, one a line; lines that are not one are passed over."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record


def logged_errors(path: Path) -> list[str]:
    """The messages of the records at level error or above in the bot's JSON log."""
    return [f"{record.get('logger')}: {record.get('message')}" for record in _records(path)
            if record.get("level") in ("error", "critical")]


def logged_reasons(path: Path, env: str) -> list[str]:
    """Why Conveyor skipped or refused a promotion into `env`, from its JSON log (a downstream
    promotion that is not opened is reported nowhere on GitHub)."""
    found: list[str] = []
    for record in _records(path):
        message = str(record.get("message") or "")
        if record.get("env") == env and ("skipped" in message or "refused" in message):
            found.append(str(record.get("detail") or message))
    return found
