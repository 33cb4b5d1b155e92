"""The config check's report: parts merged, findings grouped by file, a bounded summary."""

from __future__ import annotations

from bot.configcheck.report import SUMMARY_FINDINGS, Finding, Report, render


def test_an_annotation_is_one_line_on_github_and_bounded() -> None:
    finding = Finding("apps/web.yaml", 7, "x" * 1500)
    assert finding.annotation("notice") == {
        "path": "apps/web.yaml", "start_line": 7, "end_line": 7,
        "annotation_level": "notice", "message": "x" * 1000}
    assert finding.annotation()["annotation_level"] == "failure"


def test_parts_checked_elsewhere_add_up() -> None:
    whole = Report("1.31", files=2, documents=3, resources=1, kustomizations={"apps/a"},
                   values_checked=1)
    whole.add("a.yaml", [(1, "bad")])
    part = Report("1.31", files=1, documents=4, resources=2, kustomizations={"apps/a", "apps/b"},
                  values_checked=2)
    part.add("b.yaml", [(2, "worse")])
    part.notes.append(Finding("c.yaml", 1, "not validated"))
    part.notices.append(Finding(".conveyor.yml", 3, "advice"))
    whole.merge(part)
    assert (whole.files, whole.documents, whole.resources, whole.values_checked) == (3, 7, 3, 3)
    assert whole.kustomizations == {"apps/a", "apps/b"}
    assert [f.message for f in whole.findings] == ["bad", "worse"]
    assert [f.message for f in whole.notes + whole.notices] == ["not validated", "advice"]


def test_findings_are_grouped_by_file_and_the_summary_is_bounded() -> None:
    report = Report("1.31", files=2, documents=2)
    report.add("a.yaml", [(n, f"problem {n}") for n in range(1, SUMMARY_FINDINGS + 5)])
    report.add("b.yaml", [(1, "last")])
    report.notices.append(Finding(".conveyor.yml", 2, "advice"))
    conclusion, title, summary = render(report)
    assert conclusion == "failure"
    assert title == f"{SUMMARY_FINDINGS + 5} problem(s) in 2 file(s)"
    lines = summary.splitlines()
    assert f"**`a.yaml`** ({SUMMARY_FINDINGS + 4})" in lines
    assert "**`b.yaml`** (1)" not in lines  # past the bound: only in the annotations
    assert "…and 5 more (see the annotations)." in lines
    assert lines[-2:] == ["**`.conveyor.yml`** (1)", "- line 2: advice"]


def test_a_clean_run_says_what_was_not_validated_in_its_title() -> None:
    report = Report("", files=3, documents=5)
    report.notes.append(Finding("chart/templates/d.yaml", 1, "Helm template"))
    conclusion, title, summary = render(report)
    assert conclusion == "success"
    assert title == "3 file(s), 5 document(s) checked, no problems; 1 not validated"
    assert "against Kubernetes (no schemas installed)" in summary
    assert "### Not validated" in summary and "### Problems" not in summary
