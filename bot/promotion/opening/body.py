"""Text of promotion pull requests: title, body, commit message (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.domain.commands.parse import HELP_TEXT
from bot.domain.durations import format_duration
from bot.domain.policy import Environment
from bot.domain.provenance import Provenance
from bot.names import GATE_CHECK
from bot.promotion.authorship.marker import PromotionMarker
from bot.promotion.authorship.trailers import CommitTrailers, Moved
from bot.promotion.authorship.trailers import commit_message as trailer_message
from bot.promotion.effects import PromotionEffect
from bot.promotion.opening.candidates import Candidate
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


def pr_title(candidate: Candidate, environment: str, *, rollback: bool = False,
             from_version: str | None = None) -> str:
    """`Promote web 1.4.2 to production`; a rollback says where it goes back to and from:
    `Roll back web in production to 1.4.1 (from 1.4.2)`."""
    if not rollback:
        return f"Promote {candidate.service} {candidate.version} to {environment}"
    since = f" (from {from_version})" if from_version and from_version != candidate.version \
        else ""
    return f"Roll back {candidate.service} in {environment} to {candidate.version}{since}"


def commit_message(candidate: Candidate, environment: str, *, rollback: bool = False,
                   from_version: str | None = None) -> str:
    """The title, then the trailers the trust decisions read (``trust.py``): this commit is
    Conveyor's own, so they are the facts nobody else can edit."""
    moved = Moved(candidate.service, candidate.digest, candidate.source_repo,
                  candidate.source_sha)
    trailers = CommitTrailers(environment=environment, moved=(moved,),
                              version=candidate.version, tag=candidate.tag,
                              requester=candidate.requester, rollback=rollback)
    title = pr_title(candidate, environment, rollback=rollback, from_version=from_version)
    return trailer_message(title, (), trailers)


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


def provenance_lines(provenance: Provenance) -> list[str]:
    """The provenance table of one image, and a caution when its attestation is refused."""
    lines = ["| | |", "| --- | --- |"]
    rows = [
        ("Package version", provenance.package),
        ("Release", provenance.release),
        ("Source commit", provenance.source_commit),
        ("CI workflow run", provenance.workflow_run),
        ("Attestation", None),
        ("Source changes", provenance.compare),
    ]
    for label, link in rows:
        cell = (provenance.attestation_text() if label == "Attestation"
                else link.markdown() if link else "not found")
        lines.append(f"| {label} | {cell} |")
    problem = provenance.attestation_problem
    if problem:
        lines += ["", "> [!CAUTION]", f"> **Attestation not verified:** {escape_markdown(problem)}"]
    return lines


def follows_note(environment: Environment, upstream_pr: int) -> str:
    """The line that links the upstream promotion a downstream one follows."""
    if len(environment.after) == 1:
        return f"Follows #{upstream_pr} in {environment.upstreams}."
    return (f"Follows #{upstream_pr}; {environment.name} needs this digest in "
            f"{environment.upstreams}.")


def gate_lines(environment: Environment, what: str) -> list[str]:
    """The evidence checklist of a gated environment (``what``: which digests it is for)."""
    every = "every one of " if len(environment.after) > 1 else ""
    lines = [f"This environment needs evidence from {every}**{environment.upstreams}** {what} "
             f"before the check `{GATE_CHECK}` passes:"]
    for upstream in environment.after:
        for kind in environment.evidence:
            lines.append(f"- [ ] {kind} in {upstream}")
    if environment.soak:
        lines.append(f"- [ ] soaked for {format_duration(environment.soak)} since that evidence")
    if environment.approvals:
        lines.append(f"- [ ] {environment.approvals} approving review(s) by "
                     f"{', '.join(environment.approvers) or 'a maintainer'}")
    lines += ["", "The check's summary shows the live state of each condition."]
    return lines


def commands_lines() -> list[str]:
    return ["<details><summary>Commands</summary>", "", HELP_TEXT.strip(), "", "</details>"]
