"""The check run output of the promotion gate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.gate.model import Condition, Verdict
from bot.promotion.gate.render import MAX_OUTPUT, MAX_TITLE, NO_GATED_CHANGE, render_gate_output

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def verdict(*conditions: Condition, **fields: object) -> Verdict:
    values: dict[str, object] = {
        "status": "completed",
        "conclusion": "failure",
        "title": "Web → production: no merged evidence",
        "conditions": conditions,
        "recheck_at": None,
        "evaluated_at": NOW,
    }
    values.update(fields)
    return Verdict(**values)  # type: ignore[arg-type]


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_no_gated_change() -> None:
    output = render_gate_output(NO_GATED_CHANGE)
    assert output["title"] == "No gated environment changed"
    assert output["summary"].startswith("no gated environment changed")
    assert output["text"] == ""


def test_every_condition_is_listed_under_its_subject() -> None:
    output = render_gate_output(
        verdict(
            Condition(True, "ghcr.io/acme/web is under allowed_images", subject="web → production"),
            Condition(
                True,
                "merged in staging at 2026-11-29T10:00:00Z: PR #4",
                link="https://github.com/acme/deploy/pull/4",
                subject="web → production",
            ),
            Condition(False, "no deployed evidence from staging", subject="web → production"),
            Condition(True, "no freeze window open", subject="production"),
            Condition(False, "needs 1 more approval", when_unmet="action_required"),
        )
    )
    assert output["title"] == "Web → production: no merged evidence"
    assert output["summary"].splitlines() == [
        "### web → production",
        "- ✅ ghcr.io/acme/web is under allowed\\_images",
        "- ✅ merged in staging at 2026-11-29T10:00:00Z: PR #4 "
        "([evidence](https://github.com/acme/deploy/pull/4))",
        "- ❌ no deployed evidence from staging",
        "",
        "### production",
        "- ✅ no freeze window open",
        "",
        "### Pull request",
        "- ❌ needs 1 more approval",
    ]


def test_pending_conditions_say_when_they_pass() -> None:
    ends = NOW + timedelta(minutes=30)
    output = render_gate_output(
        verdict(
            Condition(
                False,
                "soaking until 2026-11-29T12:30:00Z",
                pending_until=ends,
                subject="web → production",
                when_unmet="in_progress",
            ),
            Condition(
                False,
                "soak of 30m starts once all evidence exists",
                subject="api → production",
                when_unmet="in_progress",
            ),
            status="in_progress",
            conclusion=None,
            title="Soaking until 2026-11-29T12:30:00Z",
            recheck_at=ends,
        )
    )
    lines = output["summary"].splitlines()
    assert "- ⏳ soaking until 2026-11-29T12:30:00Z — passes at 2026-11-29T12:30:00Z" in lines
    assert "- ⏳ soak of 30m starts once all evidence exists" in lines
    assert "Conveyor re-evaluates the gate at 2026-11-29T12:30:00Z." in output["text"]
    assert ("Verdict reached at 2026-11-29T12:00:00Z; Conveyor edits this check run only when "
            "the verdict changes.") in output["text"]
    assert output["text"].startswith("0 of 2 conditions met.")


def test_user_text_cannot_inject_markdown() -> None:
    output = render_gate_output(
        verdict(Condition(False, "on hold: see [this](javascript:alert(1)) <b>now</b> `x`"))
    )
    line = output["summary"].splitlines()[1]
    assert line == ("- ❌ on hold: see \\[this\\](javascript:alert(1)) \\<b\\>now\\</b\\> \\`x\\`")


def test_multi_line_text_stays_on_one_line() -> None:
    output = render_gate_output(verdict(Condition(False, "on hold: a\n### b\r\n- c")))
    assert output["summary"].splitlines()[1:] == ["- ❌ on hold: a ### b - c"]


@pytest.mark.parametrize(
    ("link", "rendered"),
    [
        ("https://github.com/a/b/pull/1", " ([evidence](https://github.com/a/b/pull/1))"),
        ("http://127.0.0.1:8080/a/b/pull/1", " ([evidence](http://127.0.0.1:8080/a/b/pull/1))"),
        ("https://x/wiki/A_(b) c", " ([evidence](https://x/wiki/A_%28b%29%20c))"),
        ("javascript:alert(1)", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_links(link: str | None, rendered: str) -> None:
    output = render_gate_output(verdict(Condition(True, "merged", link=link)))
    assert output["summary"].splitlines()[1] == f"- ✅ merged{rendered}"


def test_title_is_one_bounded_line() -> None:
    output = render_gate_output(verdict(Condition(False, "x"), title="On hold: a\nb " + "y" * 400))
    assert "\n" not in output["title"]
    assert len(output["title"]) == MAX_TITLE
    assert output["title"].startswith("On hold: a b yyy")
    assert output["title"].endswith("…")


def test_summary_is_truncated_with_a_note() -> None:
    many = [
        Condition(False, f"condition {i} " + "é" * 200, subject=f"svc{i} → production")
        for i in range(2000)
    ]
    output = render_gate_output(verdict(*many))
    summary = output["summary"]
    assert size(summary) <= MAX_OUTPUT
    assert size(summary) > MAX_OUTPUT - 500  # the budget is used, not wasted
    assert summary.startswith("### svc0 → production\n- ❌ condition 0 ")
    shown, note = summary.split("\n\n… cut to GitHub's output limit; ")
    omitted = int(note.split()[0])
    assert note == f"{omitted} more lines not shown."
    full_lines = 2000 * 3 - 1
    assert len(shown.splitlines()) + omitted == full_lines
    assert size(output["text"]) < 1000


def test_a_single_huge_condition_is_cut_not_dropped() -> None:
    output = render_gate_output(verdict(Condition(False, "é" * 70_000)))
    summary = output["summary"]
    assert MAX_OUTPUT - 3 <= size(summary) <= MAX_OUTPUT
    assert summary.startswith("### Pull request\n- ❌ éé")
    assert summary.endswith("éé…\n\n… cut to GitHub's output limit.")


def test_a_line_that_would_leave_a_sliver_is_dropped_whole() -> None:
    first = "x" * (MAX_OUTPUT - 150)
    output = render_gate_output(
        verdict(Condition(False, first), Condition(False, "y" * 500), Condition(True, "z"))
    )
    lines = output["summary"].splitlines()
    assert lines[1] == f"- ❌ {first}"
    assert output["summary"].endswith("cut to GitHub's output limit; 2 more lines not shown.")
    assert size(output["summary"]) <= MAX_OUTPUT


def test_output_exactly_at_the_limit_is_untouched() -> None:
    text = "a" * (MAX_OUTPUT - len("### Pull request\n- ✅ ".encode()))
    output = render_gate_output(verdict(Condition(True, text)))
    assert size(output["summary"]) == MAX_OUTPUT
    assert "output limit" not in output["summary"]


def test_text_without_evaluation_time_or_recheck() -> None:
    output = render_gate_output(verdict(Condition(True, "ok"), evaluated_at=None))
    assert output["text"].splitlines()[:2] == ["1 of 1 conditions met.", ""]
