"""How the sandbox tells its story on a console: steps, durations, who reports, tables."""

from __future__ import annotations

import io
from datetime import timedelta

from bot.sandbox.telling import Narrator, dashboard_rows, reporting_tool, spoken


def test_steps_are_numbered_across_skips_and_problems_are_kept() -> None:
    out = io.StringIO()
    narrator = Narrator(out)
    narrator.step("push web:2.0.0")
    narrator.said("the registry answered")
    narrator.skip("promote to prod", "the freeze holds")
    narrator.problem("no deployment report arrived")
    narrator.step("merge")
    narrator.line()
    assert out.getvalue().splitlines() == [
        "1. push web:2.0.0",
        "   the registry answered",
        "2. (skipped) promote to prod — the freeze holds",
        "   ✗ no deployment report arrived",
        "3. merge",
        "",
    ]
    assert narrator.problems == ["no deployment report arrived"]
    assert narrator.step_number == 3


def test_durations_in_words() -> None:
    assert spoken(timedelta(minutes=90)) == "1 hour 30 minutes"
    assert spoken(timedelta(days=2, seconds=1)) == "2 days 1 second"
    assert spoken(timedelta(hours=1)) == "1 hour"
    assert spoken(timedelta(0)) == "no time"
    assert spoken(timedelta(milliseconds=300)) == "no time"


def test_flux_contexts_are_told_apart_from_argo_cd() -> None:
    assert reporting_tool("kustomization/web-prod/1a2b") == "Flux"
    assert reporting_tool("HelmRelease/web/3c") == "Flux"
    assert reporting_tool("flux-system") == "Flux"
    assert reporting_tool("argocd/web-prod") == "Argo CD"
    assert reporting_tool(None) == "Argo CD"


def test_dashboard_tables_are_aligned_and_headings_kept() -> None:
    body = ("# Conveyor dashboard\n"
            "intro text is not shown\n"
            "| service | **staging** | prod |\n"
            "|---|:---:|---|\n"
            "| [web](https://example.test/web) | `2.0.0` | 1.0.0 |\n"
            "| api | 10.1.0 | — |\n"
            "| a | b |\n"
            "## Holds\n"
            "| env | reason |\n"
            "| prod | freeze |\n")
    assert dashboard_rows(body) == [
        "   Conveyor dashboard",
        "   service  staging  prod",
        "   web      2.0.0    1.0.0",
        "   api      10.1.0   —",
        "   a  b",
        "   Holds",
        "   env   reason",
        "   prod  freeze",
    ]


def test_a_dashboard_without_tables_gives_its_headings_only() -> None:
    assert dashboard_rows("") == []
    assert dashboard_rows("### Trains\nnothing yet") == ["   Trains"]
