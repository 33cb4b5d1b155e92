"""What a config check found, and the check run's conclusion, title and summary for it."""

from __future__ import annotations

from dataclasses import dataclass, field

SUMMARY_FINDINGS = 200


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def annotation(self, level: str = "failure") -> dict[str, object]:
        return {"path": self.path, "start_line": self.line, "end_line": self.line,
                "annotation_level": level, "message": self.message[:1000]}


@dataclass
class Report:
    """What one run found: failures, neutral notes, advice, and what it looked at."""

    kubernetes_version: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    notices: list[Finding] = field(default_factory=list)  # the policy's advice
    files: int = 0
    documents: int = 0
    resources: int = 0
    kustomizations: set[str] = field(default_factory=set)
    values_checked: int = 0

    def add(self, path: str, found: list[tuple[int, str]]) -> None:
        self.findings += [Finding(path, line, message) for line, message in found]

    def merge(self, other: Report) -> None:
        """Add what `other` (a part of the same run, checked elsewhere) found."""
        self.findings += other.findings
        self.notes += other.notes
        self.notices += other.notices
        self.files += other.files
        self.documents += other.documents
        self.resources += other.resources
        self.kustomizations |= other.kustomizations
        self.values_checked += other.values_checked


def _grouped(items: list[Finding], limit: int) -> list[str]:
    lines: list[str] = []
    current = None
    for item in items[:limit]:
        if item.path != current:
            current = item.path
            count = sum(1 for other in items if other.path == item.path)
            lines += ["", f"**`{item.path}`** ({count})"]
        lines.append(f"- line {item.line}: {item.message}")
    if len(items) > limit:
        lines += ["", f"…and {len(items) - limit} more (see the annotations)."]
    return lines


def render(report: Report) -> tuple[str, str, str]:
    """(conclusion, title, summary) of the check run."""
    scope = (f"Checked {report.files} file(s) and {report.documents} YAML document(s): "
             f"{report.resources} Kubernetes resource(s) against Kubernetes "
             f"{report.kubernetes_version or '(no schemas installed)'}, "
             f"{len(report.kustomizations)} kustomization(s), "
             f"{report.values_checked} Helm values file(s) against their chart's schema.")
    lines = [scope]
    if report.findings:
        files = len({f.path for f in report.findings})
        title = f"{len(report.findings)} problem(s) in {files} file(s)"
        lines += ["", "### Problems", *_grouped(report.findings, SUMMARY_FINDINGS)]
        conclusion = "failure"
    else:
        title = f"{report.files} file(s), {report.documents} document(s) checked, no problems"
        conclusion = "success"
    if report.notes:
        title += f"; {len(report.notes)} not validated" if not report.findings else ""
        lines += ["", "### Not validated", *_grouped(report.notes, SUMMARY_FINDINGS)]
    if report.notices:
        lines += ["", "### Notices", *_grouped(report.notices, SUMMARY_FINDINGS)]
    return conclusion, title, "\n".join(lines)
