"""What a timer brings back, as typed values: each kind of job with what it carries, and the
payload it travels as through the queue (and Redis). The payload keeps a webhook's shape, its
installation and repository where a webhook has them, because the worker and the handlers read
those of every job alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol


class TimerJob(Protocol):
    """A job a timer brings back; `EVENT` names it (the queue's event is `conveyor.<EVENT>`)."""

    EVENT: ClassVar[str]

    def payload(self) -> dict[str, Any]: ...


def _installation(data: Mapping[str, Any]) -> int | None:
    found = (data.get("installation") or {}).get("id")
    return found if isinstance(found, int) else None


def _where(full_name: str, installation: int | None) -> dict[str, Any]:
    return {"repository": {"full_name": full_name}, "installation": {"id": installation}}


@dataclass(frozen=True)
class GateRecheck:
    """The gate of a PR evaluated again: a soak or a freeze window ends."""

    EVENT: ClassVar[str] = "recheck"
    full_name: str
    number: int
    installation: int | None

    def payload(self) -> dict[str, Any]:
        return {**_where(self.full_name, self.installation), "number": self.number}

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> GateRecheck:
        return cls(str(data["repository"]["full_name"]), int(data["number"]),
                   _installation(data))


@dataclass(frozen=True)
class MergeRetry:
    """A merge of Conveyor's own PR tried again, guarded by the head Conveyor made."""

    EVENT: ClassVar[str] = "merge"
    full_name: str
    number: int
    head: str
    method: str
    environment: str
    attempt: int
    gated: bool
    installation: int | None

    def payload(self) -> dict[str, Any]:
        return {**_where(self.full_name, self.installation), "number": self.number,
                "head": self.head, "method": self.method, "gated": self.gated,
                "environment": self.environment, "attempt": self.attempt}

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> MergeRetry:
        return cls(str(data["repository"]["full_name"]), int(data["number"]), str(data["head"]),
                   str(data["method"]), environment=str(data.get("environment") or "unknown"),
                   attempt=int(data.get("attempt") or 1), gated=bool(data.get("gated")),
                   installation=_installation(data))


@dataclass(frozen=True)
class DashboardDue:
    """The dashboard issue of a repository refreshed (a burst of changes makes one)."""

    EVENT: ClassVar[str] = "dashboard"
    full_name: str
    installation: int | None

    def payload(self) -> dict[str, Any]:
        return _where(self.full_name, self.installation)


@dataclass(frozen=True)
class DeliveryDue:
    """The delivery figures of a repository read again after a merge."""

    EVENT: ClassVar[str] = "delivery"
    full_name: str
    installation: int | None

    def payload(self) -> dict[str, Any]:
        return _where(self.full_name, self.installation)
