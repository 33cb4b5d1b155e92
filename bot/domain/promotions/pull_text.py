"""The words of a promotion pull request that need no render: its title, its commit message
(the trailers the trust decisions read), the provenance table, the gate's checklist, the
commands. The bodies (`bot.promotion.opening.body`, `bot.promotion.trains.body`) are made of
these."""

from __future__ import annotations

from bot.domain.commands.parse import HELP_TEXT
from bot.domain.durations import format_duration
from bot.domain.policy import Environment
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.trailers import CommitTrailers, Moved
from bot.domain.promotions.trailers import commit_message as trailer_message
from bot.domain.provenance import Provenance
from bot.names import GATE_CHECK
from bot.text import escape_markdown


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
                              release_tag=candidate.release_tag,
                              requester=candidate.requester, rollback=rollback)
    title = pr_title(candidate, environment, rollback=rollback, from_version=from_version)
    return trailer_message(title, (), trailers)


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
