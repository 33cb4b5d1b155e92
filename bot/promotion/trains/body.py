"""Text of release-train pull requests: title, commit message and body (pure).

The body names every service the train moves (a table of files and versions), the services
left out because they already run that digest, one provenance block per service, the gate's
checklist and the marker. GitHub refuses bodies above 65,536 characters, so the provenance
blocks are shown open while the body is short, folded into one ``<details>`` per service when
it is long, and reduced to one line of links per service when even that does not fit; a train
whose table and marker alone do not fit is refused (:class:`TrainTooLarge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.domain.policy import Environment
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.marker import PromotionMarker
from bot.domain.promotions.pull_text import commands_lines, gate_lines, provenance_lines
from bot.domain.promotions.trailers import CommitTrailers, Moved, commit_message
from bot.domain.provenance import Provenance
from bot.promotion.opening.body import MAX_BODY, Change, effect_lines
from bot.text import short_digest

# Up to this size every provenance block is shown open; above it each folds into <details>.
OPEN_BLOCKS_LIMIT = 20_000


class TrainTooLarge(ValueError):
    """The train's body would not fit GitHub's limit even with one line per service."""


@dataclass(frozen=True)
class Move:
    """One service the train moves."""

    candidate: Candidate
    change: Change
    provenance: Provenance


def train_title(group: str, environment: str, count: int, *, rollback: bool = False) -> str:
    services = f"{count} service{'s' if count != 1 else ''}"
    verb = "Roll back" if rollback else "Promote"
    return f"{verb} {group} to {environment} ({services})"


def train_commit_message(group: str, environment: str, moves: Sequence[Move], *,
                         rollback: bool = False, requester: str | None = None) -> str:
    """Title, one line per service, then the trailers: one Service/Digest/Source triple per
    service, in the order of the table."""
    lines = [f"{move.candidate.service}: {move.change.old_tag or '—'} → "
             f"{move.candidate.version} ({short_digest(move.candidate.digest)})"
             for move in moves]
    trailers = CommitTrailers(
        environment=environment, train=group, requester=requester, rollback=rollback,
        moved=tuple(Moved(move.candidate.service, move.candidate.digest,
                          move.candidate.source_repo, move.candidate.source_sha)
                    for move in moves))
    return commit_message(train_title(group, environment, len(moves), rollback=rollback),
                          lines, trailers)


def train_body(group: str, environment: Environment, moves: Sequence[Move],
               left_out: Sequence[tuple[str, str]], marker: PromotionMarker, *,
               rollback_note: str | None = None) -> str:
    """``left_out``: (service, version) of the group's services already at their digest."""
    head = _head(group, environment, moves, left_out, rollback_note)

    def render(blocks: list[str], shown: PromotionMarker) -> str:
        tail = _tail(environment, rollback_note is not None, shown)
        return "\n".join([*head, "", "### Provenance", "", *blocks, *tail])

    body = render(_open_blocks(moves), marker)
    if len(body) <= OPEN_BLOCKS_LIMIT:
        return body
    body = render(_folded_blocks(moves), marker)
    if len(body) <= MAX_BODY:
        return body
    body = render(_link_lines(moves), _compact(marker))
    if len(body) <= MAX_BODY:
        return body
    raise TrainTooLarge(
        f"a train of {len(moves)} services does not fit in one pull request body "
        f"(GitHub's limit is 65,536 characters); split the group into smaller groups")


def _compact(marker: PromotionMarker) -> PromotionMarker:
    """The marker with only what each member sets (service, digest, tag, version)."""
    return replace(marker, members=tuple(
        replace(member, path="", previous_digest=None, previous_tag=None, source_sha=None)
        for member in marker.members))


def _head(group: str, environment: Environment, moves: Sequence[Move],
          left_out: Sequence[tuple[str, str]], rollback_note: str | None) -> list[str]:
    count = f"{len(moves)} service{'s' if len(moves) != 1 else ''}"
    if rollback_note is not None:
        intro = (f"Rolls back the release train **{group}** in **{environment.name}**: "
                 f"{count} return to the combination that ran there before.")
    elif environment.gated:
        intro = (f"Promotes the release train **{group}** to **{environment.name}**: {count}, "
                 f"each to the digest that holds evidence in **{environment.upstreams}** now.")
    else:
        intro = (f"Promotes the release train **{group}** to **{environment.name}**: {count} "
                 "of one release, together.")
    lines = [intro, "", "| service | file | from | to |", "| --- | --- | --- | --- |"]
    for move in moves:
        candidate, change = move.candidate, move.change
        lines.append(f"| {candidate.service} | `{change.path}` "
                     f"| `{change.old_tag or '—'}` `{short_digest(change.old_digest)}` "
                     f"| `{candidate.tag or candidate.version}` "
                     f"`{short_digest(candidate.digest)}` |")
    notes = [f"{move.candidate.service}: {note}" for move in moves for note in move.change.notes]
    if notes:
        lines += ["", *[f"> {note}" for note in notes]]
    built = {move.change.effect.target: move.change.effect for move in moves}
    for effect in built.values():
        lines += effect_lines(effect)
    if left_out:
        named = ", ".join(f"{service} `{version}`" for service, version in left_out)
        lines += ["", f"Left out, already at that digest in {environment.name}: {named}."]
    if rollback_note:
        lines += ["", rollback_note]
    return lines


def _tail(environment: Environment, rollback: bool, marker: PromotionMarker) -> list[str]:
    lines: list[str] = []
    if environment.gated:
        what = ("for each of these digests (a rollback's evidence is that each ran here "
                "before)" if rollback else "for each of these digests, service by service")
        lines += ["", "### Gate", "", *gate_lines(environment, what)]
    return [*lines, "", *commands_lines(), "", marker.render()]


def _image(candidate: Candidate) -> str:
    return f"`{candidate.image}:{candidate.tag or candidate.version}@{candidate.digest}`"


def _open_blocks(moves: Sequence[Move]) -> list[str]:
    lines: list[str] = []
    for move in moves:
        candidate = move.candidate
        lines += [f"#### {candidate.service} {candidate.version}", "",
                  f"Image: {_image(candidate)}", "", *provenance_lines(move.provenance), ""]
    return lines


def _folded_blocks(moves: Sequence[Move]) -> list[str]:
    lines: list[str] = []
    for move in moves:
        candidate = move.candidate
        lines += [f"<details><summary><b>{candidate.service}</b> {candidate.version}</summary>",
                  "", f"Image: {_image(candidate)}", "", *provenance_lines(move.provenance), "",
                  "</details>", ""]
    return lines


def _link_lines(moves: Sequence[Move]) -> list[str]:
    """One line per service: its source commit (else its release), and a provenance caution."""
    lines: list[str] = []
    for move in moves:
        provenance = move.provenance
        link = provenance.source_commit or provenance.release
        caution = " ⚠️ attestation not verified" if provenance.attestation_problem else ""
        lines.append(f"- **{move.candidate.service}** {move.candidate.version}: "
                     f"{link.markdown() if link else 'no provenance found'}{caution}")
    return lines
