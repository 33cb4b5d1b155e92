"""Reading what the bot did in the emulator, as a person reads it on a console."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from bot.names import GATE_CHECK
from bot.sandbox.runner import Sandbox
from bot.text import unescape_markdown
from conveyor_emulator.faults.requestlog import RequestEntry

_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"(?<!\\)(?:\*\*|`)")  # bold and code marks that are not escaped


def plain(markdown: str) -> str:
    """Markdown of one line as a person reads it on a console: no links, bold or code marks."""
    return unescape_markdown(_MARKS.sub("", _LINK.sub(r"\1", markdown)))


def attestation_of(pr: dict[str, Any]) -> str | None:
    """The Attestation row of a promotion PR's provenance table, as a person reads it."""
    for line in str(pr.get("body") or "").splitlines():
        if line.startswith("| Attestation |"):
            return plain(line.removeprefix("| Attestation |").rstrip(" |").strip())
    return None


def find_pull(sandbox: Sandbox, full_name: str, title: str) -> dict[str, Any] | None:
    found = [pr for pr in sandbox.emulator.pulls(full_name, state="all") if pr["title"] == title]
    return found[-1] if found else None


def gate_of(sandbox: Sandbox, full_name: str, pr: dict[str, Any]) -> dict[str, Any] | None:
    fresh = next(p for p in sandbox.emulator.pulls(full_name, state="all")
                 if p["number"] == pr["number"])
    runs = sandbox.emulator.check_runs(full_name, fresh["head"]["sha"], GATE_CHECK)
    return runs[-1] if runs else None


def gate_text(run: dict[str, Any] | None) -> str:
    if run is None:
        return f"gate: no {GATE_CHECK} check run on the PR's head commit"
    state = run["conclusion"] if run["status"] == "completed" else run["status"]
    title = str(run["output"].get("title") or "")
    words = [title[:1].lower() + title[1:]] if title else []
    for raw in str(run["output"].get("summary") or "").splitlines():
        text = raw.removeprefix("- ").strip()
        if text.startswith("⏳") and "soaking until" in text and "soak" not in title.lower():
            words.append(plain(text.removeprefix("⏳").strip().split(" — ", 1)[0]))
    return f"gate: {state} — {'; '.join(words)}" if words else f"gate: {state}"


def gate_state(run: dict[str, Any] | None) -> str:
    if run is None:
        return "missing"
    return str(run["conclusion"] if run["status"] == "completed" else run["status"])


def reply_to(sandbox: Sandbox, full_name: str, number: int, comment_id: int) -> str | None:
    marker = f"<!-- conveyor:reply {comment_id} -->"
    for comment in sandbox.emulator.comments(full_name, number):
        body = str(comment.get("body") or "")
        if marker in body:
            lines = [plain(line).strip() for line in body.replace(marker, "").splitlines()]
            return " ".join(line for line in lines if line)
    return None


def failed(reply: str) -> bool:
    """A reply that reports an error (Conveyor marks those ❌ or ⚠️)."""
    return "❌" in reply or "⚠" in reply


CONTENT_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


def content_writes(entries: Iterable[RequestEntry]) -> int:
    """The installation's REST requests that create or change something: those GitHub counts
    against its content-creation limits (80 a minute, 500 an hour)."""
    return sum(1 for entry in entries if entry.method in CONTENT_METHODS
               and entry.installation_id is not None and entry.resource == "core")
