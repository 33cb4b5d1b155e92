"""Results: sections of rows, the machine they ran on, a Markdown table and a JSON file."""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass
class Row:
    measure: str
    value: str
    target: str = ""
    verdict: str = ""  # "ok", "over", or "" when there is no target
    note: str = ""


@dataclass
class Section:
    title: str
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # raw numbers for the JSON file

    def add(self, measure: str, value: str, *, target: str = "", ok: bool | None = None,
            note: str = "") -> None:
        verdict = "" if ok is None else ("ok" if ok else "over")
        self.rows.append(Row(measure, value, target, verdict, note))


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, Python: written into the table header and the JSON file."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    memory_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_kb = int(line.split()[1])
    except OSError:
        memory_kb = 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": model or "unknown",
        "cores": usable,
        "memory_gb": round(memory_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()}",
        # other work on a shared machine: why the ratios, not the absolute times, matter
        "load_average_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p99 of 100 samples is the 99th smallest)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def render(sections: Sequence[Section], facts: dict[str, Any], command: str) -> str:
    lines = [
        f"Machine: {facts['cpu_model']}, {facts['cores']} cores, {facts['memory_gb']} GB; "
        f"{facts['implementation']} {facts['python']} on {facts['os']}; "
        f"load average {facts['load_average_1m']} at the start",
        "",
        f"Command: `{command}`",
        "",
        "| measurement | result | target | |",
        "| --- | --- | --- | --- |",
    ]
    for section in sections:
        lines.append(f"| **{section.title}** | | | |")
        for row in section.rows:
            mark = {"ok": "✅", "over": "❌"}.get(row.verdict, "")
            value = f"{row.value} ({row.note})" if row.note else row.value
            lines.append(f"| {row.measure} | {value} | {row.target} | {mark} |")
    return "\n".join(lines)


def write_json(path: Path, sections: Sequence[Section], facts: dict[str, Any], command: str,
               quick: bool, elapsed: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "quick": quick,
        "elapsed_seconds": round(elapsed, 1),
        "machine": facts,
        "sections": [{"title": s.title, "rows": [asdict(r) for r in s.rows], "data": s.data}
                     for s in sections],
    }
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
