"""The body of a single-service promotion pull request (pure): what moves, what the
environment's render runs differently (the render's types), then the words of
`bot.domain.promotions.pull_text` and the marker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.domain.policy import Environment
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.marker import PromotionMarker
from bot.domain.promotions.pull_text import commands_lines, gate_lines, provenance_lines
from bot.domain.provenance import Provenance
from bot.promotion.effects import PromotionEffect
from bot.render.targets import ChartTarget
from bot.render.workloads import WorkloadChange
from bot.text import escape_markdown, short_digest

MAX_BODY = 60_000
MAX_WORKLOAD_ROWS = 100  # a body stays readable (and within GitHub's limit)


@dataclass(frozen=True)
class Change:
    path: str
    old_tag: str | None
    old_digest: str | None
    notes: tuple[str, ...] = ()
    # what the environment's render runs differently, when it was rendered
    effect: PromotionEffect = field(default_factory=PromotionEffect)


def pr_body(
    candidate: Candidate,
    environment: Environment,
    changes: Sequence[Change],
    provenance: Provenance,
    marker: PromotionMarker,
    *,
    upstream_note: str | None = None,
    rollback_note: str | None = None,
) -> str:
    """The Markdown body of a single-service promotion PR, ``marker`` last.

    Says what moves from which version to which in each of ``changes``, with the provenance
    table, the gate's checklist when ``environment`` is gated, and the commands. Never longer
    than ``MAX_BODY``: a longer body is cut before the marker, which always stays whole.
    """
    old = changes[0] if changes else None
    old_version = (old.old_tag or "—") if old else "—"
    lines = [
        f"Promotes **{candidate.service}** in **{environment.name}** from "
        f"`{old_version}` (`{short_digest(old.old_digest if old else None)}`) to "
        f"`{candidate.version}` (`{short_digest(candidate.digest)}`).",
        "",
        f"Image: `{candidate.image}:{candidate.tag or candidate.version}@{candidate.digest}`",
        "",
        "| file | from | to |",
        "| --- | --- | --- |",
    ]
    for change in changes:
        lines.append(
            f"| `{change.path}` | `{change.old_tag or '—'}` `{short_digest(change.old_digest)}` "
            f"| `{candidate.tag or '—'}` `{short_digest(candidate.digest)}` |"
        )
    notes = [note for change in changes for note in change.notes]
    if notes:
        lines += ["", *[f"> {note}" for note in notes]]
    for change in changes:
        lines += effect_lines(change.effect)
    if rollback_note:
        lines += ["", rollback_note]
    if upstream_note:
        lines += ["", upstream_note]
    lines += ["", "### Provenance", "", *provenance_lines(provenance)]
    if environment.gated:
        lines += ["", "### Gate", "", *gate_lines(environment, "for this same digest")]
    lines += ["", *commands_lines(), "", marker.render()]
    body = "\n".join(lines)
    if len(body) > MAX_BODY:
        marker_text = marker.render()
        body = body[: MAX_BODY - len(marker_text) - 40] + "\n\n…(truncated)\n\n" + marker_text
    return body


def effect_lines(effect: PromotionEffect) -> list[str]:
    """What the environment's render runs differently: one row per workload whose image the
    promotion changes; then every other environment whose render reads the edited file."""
    if effect.target is None:
        return []
    where = escape_markdown(effect.where)
    verb = "Rendering the chart" if isinstance(effect.target, ChartTarget) else "Building"
    if effect.problem is not None:
        lines = ["", f"> {verb} {where} could not be compared: "
                     f"{escape_markdown(effect.problem)}"]
    else:
        lines = ["", f"{verb} {where} with this change, these workloads run a new image:",
                 *_workload_rows(effect.changes)]
    for other in effect.others:
        lines += ["", f"This file is also read by the render of **{other.environment}** "
                      f"({escape_markdown(other.where)}): the change reaches it too."]
        lines += ([f"> It could not be compared: {escape_markdown(other.problem)}"]
                  if other.problem is not None else _workload_rows(other.changes))
    return lines


def _workload_rows(changes: Sequence[WorkloadChange]) -> list[str]:
    lines = ["", "| workload | from | to |", "| --- | --- | --- |"]
    lines += [f"| {escape_markdown(str(c.slot))} | {escape_markdown(c.old or '—')} | "
              f"{escape_markdown(c.new)} |" for c in changes[:MAX_WORKLOAD_ROWS]]
    if len(changes) > MAX_WORKLOAD_ROWS:
        lines.append(f"| … and {len(changes) - MAX_WORKLOAD_ROWS} more | | |")
    return lines
