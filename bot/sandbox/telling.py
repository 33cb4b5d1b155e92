"""The story as a person reads it on a console: numbered steps, what was seen under each, the
problems that let the story go on, durations in words and tables aligned."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TextIO

from bot.sandbox.plan import Plan, pinned
from bot.sandbox.reading import plain
from bot.sandbox.runner import Sandbox
from bot.text import short_digest


@dataclass
class Narrator:
    out: TextIO
    step_number: int = 0
    problems: list[str] = field(default_factory=list)

    def line(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(self, text: str) -> None:
        self.step_number += 1
        self.line(f"{self.step_number}. {text}")

    def skip(self, text: str, reason: str) -> None:
        self.step_number += 1
        self.line(f"{self.step_number}. (skipped) {text} — {reason}")

    def said(self, text: str) -> None:
        self.line(f"   {text}")

    def problem(self, text: str) -> None:
        """A step that did not happen, though the story can go on."""
        self.problems.append(text)
        self.line(f"   ✗ {text}")


def spoken(value: timedelta) -> str:
    """`timedelta(minutes=90)` → "1 hour 30 minutes"."""
    seconds = int(value.total_seconds())
    parts: list[str] = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts) or "no time"


def reporting_tool(context: str | None) -> str:
    """Who posts a deployment report of this context: Flux's notification-controller names
    its statuses after the object (`kustomization/<name>/<id>`, `helmrelease/…`)."""
    if context is not None and context.lower().startswith(("kustomization/", "helmrelease/",
                                                           "flux")):
        return "Flux"
    return "Argo CD"


def dashboard_rows(body: str) -> list[str]:
    """The tables of the dashboard issue, aligned for a console."""
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if not table:
            return
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        for row in table:
            out.append("   " + "  ".join(cell.ljust(width) for cell, width in
                                          zip(row, widths, strict=False)).rstrip())
        table.clear()

    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("|"):
            cells = [plain(cell).strip() for cell in line.strip("|").split("|")]
            if all(set(cell) <= {"-", ":", " "} for cell in cells):
                continue
            if table and len(cells) != len(table[0]):
                flush()
            table.append(cells)
        else:
            flush()
            if line.startswith("#"):
                out.append("   " + line.lstrip("#").strip())
    flush()
    return out


def table_from_files(sandbox: Sandbox, plan: Plan) -> list[str]:
    rows = [["service", "environment", "tag", "digest"]]
    for name, service in plan.policy.services.items():
        for env in plan.policy.environments:
            path = plan.policy.path_for(name, env)
            text = sandbox.emulator.file(plan.deploy_repo, path)
            found = pinned({path: text}, path, service.image, service.tag_key) \
                if text is not None else None
            tag, digest = found if found is not None else ("—", None)
            rows.append([name, env, tag if text is not None else "(no file)",
                         short_digest(digest)])
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return ["   " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
            for row in rows]
