"""A log of every API request the emulator served, for counting in tests and benchmarks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RequestEntry:
    method: str
    path: str          # the route's template, e.g. /repos/{owner}/{repo}/pulls
    status: int
    installation_id: int | None
    was_304: bool
    url_path: str = ""
    at: float = 0.0  # the emulator's `timer` when the request was answered
    # the budget it is counted against: "core" (REST, 5,000 an hour) or "graphql" (points)
    resource: str = "core"
    # the name of the check run a write created or updated (which of Conveyor's check runs)
    check_name: str = ""


@dataclass
class RequestLog:
    entries: list[RequestEntry] = field(default_factory=list)

    def add(self, entry: RequestEntry) -> None:
        self.entries.append(entry)

    def count(self, method: str | None = None, path: str | None = None,
              status: int | None = None) -> int:
        return sum(
            1 for e in self.entries
            if (method is None or e.method == method.upper())
            and (path is None or e.path == path)
            and (status is None or e.status == status)
        )

    def by_kind(self) -> Counter[tuple[str, str, int]]:
        return Counter((e.method, e.path, e.status) for e in self.entries)

    def reset(self) -> None:
        self.entries.clear()

    def summary(self) -> list[dict[str, object]]:
        return [
            {"method": m, "path": p, "status": s, "count": n}
            for (m, p, s), n in sorted(self.by_kind().items())
        ]
