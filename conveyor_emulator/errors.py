"""`ApiError`: an answer GitHub gives instead of the resource (status, `message`, `errors`)."""

from __future__ import annotations

from conveyor_emulator.store.state import JSON


class ApiError(Exception):
    def __init__(self, status: int, message: str, errors: list[JSON] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


def not_found() -> ApiError:
    return ApiError(404, "Not Found")
