"""The check run ``output`` of ``conveyor/promotion-gate`` for a :class:`Verdict`."""

from __future__ import annotations

from bot.domain.gate.model import NO_GATED_CHANGE, Condition, Verdict
from bot.github.limits import OUTPUT_LIMIT
from bot.names import POLICY_PATH
from bot.text import escape_markdown, format_time, shortened

__all__ = ["MAX_OUTPUT", "MAX_TITLE", "NO_GATED_CHANGE", "REACHED_AT", "render_gate_output"]

# GitHub rejects a check run whose output.summary or output.text exceeds 65,535 characters.
# Counting UTF-8 bytes instead keeps us under the limit however GitHub counts.
MAX_OUTPUT = OUTPUT_LIMIT
MAX_TITLE = 250
# The line of the output's text saying when the verdict was reached: what a re-evaluation
# that reaches the same verdict leaves as it was (a check run's edit is a write).
REACHED_AT = "Verdict reached at "

NO_GATED_CHANGE_SUMMARY = (
    "no gated environment changed: this pull request changes no file of an environment "
    f"that has `after:` in `{POLICY_PATH}`."
)


def render_gate_output(verdict: Verdict) -> dict[str, str]:
    """``{"title", "summary", "text"}`` for the check run's ``output``."""
    if not verdict.conditions:
        summary = NO_GATED_CHANGE_SUMMARY if verdict.conclusion == "success" else verdict.title
        return {"title": shortened(verdict.title, MAX_TITLE), "summary": summary, "text": ""}
    return {
        "title": shortened(verdict.title, MAX_TITLE),
        "summary": _bounded(_summary_lines(verdict)),
        "text": _bounded(_text_lines(verdict)),
    }


def _summary_lines(verdict: Verdict) -> list[str]:
    lines: list[str] = [f"> ⚠️ {_escape(note)}" for note in verdict.notes]
    if lines:
        lines.append("")
    groups: dict[str, list[Condition]] = {}
    for condition in verdict.conditions:
        groups.setdefault(condition.subject, []).append(condition)
    for subject, conditions in groups.items():
        if lines and lines[-1]:
            lines.append("")
        lines.append(f"### {_escape(subject) if subject else 'Pull request'}")
        lines.extend(_condition_line(condition) for condition in conditions)
    return lines


def _condition_line(condition: Condition) -> str:
    if condition.ok:
        mark = "✅"
    elif condition.when_unmet == "in_progress":
        mark = "⏳"
    else:
        mark = "❌"
    line = f"- {mark} {_escape(condition.text)}"
    link = _safe_link(condition.link)
    if link:
        line += f" ([evidence]({link}))"
    if not condition.ok and condition.pending_until is not None:
        line += f" — passes at {format_time(condition.pending_until)}"
    return line


def _text_lines(verdict: Verdict) -> list[str]:
    met = sum(1 for c in verdict.conditions if c.ok)
    lines = [f"{met} of {len(verdict.conditions)} conditions met."]
    if verdict.evaluated_at is not None:
        lines.append(f"{REACHED_AT}{format_time(verdict.evaluated_at)}; Conveyor edits this "
                     "check run only when the verdict changes.")
    if verdict.recheck_at is not None:
        lines.append(f"Conveyor re-evaluates the gate at {format_time(verdict.recheck_at)}.")
    lines += [
        "",
        "✅ met · ❌ not met · ⏳ waiting (soak or freeze window); "
        "comment `/recheck` to re-evaluate now.",
    ]
    if verdict.details:
        lines += ["", "## What the cluster will run differently", "",
                  "Rendered at the pull request's base and head (Secret values masked):", "",
                  *verdict.details.splitlines()]
    return lines


def _escape(text: str) -> str:
    # A check run's output notifies no one, and the gate names approvers with @ on purpose.
    return escape_markdown(text, mentions=True)


def _safe_link(url: str | None) -> str | None:
    if not url or not url.startswith(("https://", "http://")):
        return None
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _note(omitted: int) -> str:
    more = f"; {omitted} more lines not shown" if omitted else ""
    return f"\n\n… cut to GitHub's output limit{more}."


FENCE = "```"


def _bounded(lines: list[str]) -> str:
    """Join lines; past ``MAX_OUTPUT`` keep what fits, cut the line that does not, close a
    code block the cut leaves open, add a note."""
    text = "\n".join(lines)
    if _size(text) <= MAX_OUTPUT:
        return text
    kept: list[str] = []
    used = 0  # bytes of "\n".join(kept)
    fenced = False
    closing = _size("\n" + FENCE)
    for index, line in enumerate(lines):
        separator = 1 if kept else 0
        opens = fenced or line.startswith(FENCE)  # a block that may have to be closed
        room = MAX_OUTPUT - used - separator - _size(_note(len(lines) - index - 1)) - (
            closing if opens else 0)
        if _size(line) <= room:
            kept.append(line)
            used += separator + _size(line)
            fenced ^= line.startswith(FENCE)
            continue
        # Part of a long line says more than none of it; a sliver would say nothing.
        if room - _size("…") >= 80:
            cut = line.encode("utf-8")[: room - _size("…")].decode("utf-8", "ignore")
            kept.append(cut + "…")
        break
    if fenced:
        kept.append(FENCE)
    return "\n".join(kept) + _note(len(lines) - len(kept) + (1 if fenced else 0))
