"""Positioned validation errors for the policy file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class PolicyIssue:
    path: str
    line: int  # 1-based
    column: int  # 1-based
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class PolicyError(Exception):
    def __init__(self, issues: list[PolicyIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))
