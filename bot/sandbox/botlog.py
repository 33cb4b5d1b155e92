"""The bot's JSON log read back: the errors it logged, and why it skipped a promotion that
GitHub shows nothing of."""

from __future__ import annotations

import json
from pathlib import Path


def logged_errors(path: Path) -> list[str]:
    """The messages of the records at level error or above in the bot's JSON log."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("level") in ("error", "critical"):
            found.append(f"{record.get('logger')}: {record.get('message')}")
    return found


def logged_reasons(path: Path, env: str) -> list[str]:
    """Why Conveyor skipped or refused a promotion into `env`, from its JSON log (a downstream
    promotion that is not opened is reported nowhere on GitHub)."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict) or record.get("env") != env:
            continue
        message = str(record.get("message") or "")
        if "skipped" in message or "refused" in message:
            found.append(str(record.get("detail") or message))
    return found
