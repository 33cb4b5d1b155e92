"""Where a candidate came from: its release, commit, CI run, verified attestation and source
changes, as links a promotion pull request shows."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.attestation import AttestationCheck
from bot.text import escape_markdown


@dataclass(frozen=True)
class Link:
    text: str
    url: str | None = None

    def markdown(self) -> str:
        return f"[{self.text}]({self.url})" if self.url else self.text


@dataclass(frozen=True)
class Provenance:
    package: Link | None = None
    release: Link | None = None
    source_commit: Link | None = None
    workflow_run: Link | None = None
    compare: Link | None = None
    # the digest's attestations judged against the policy; None: not looked up
    attestation: AttestationCheck | None = None
    attestations_url: str | None = None  # the attesting repository's attestations page

    @property
    def attestation_problem(self) -> str | None:
        """Why the attestation vouches for nothing, when one was found and refused (or could
        not be verified)."""
        check = self.attestation
        if check is None or check.state not in ("refused", "unavailable"):
            return None
        return "; ".join(check.reasons)

    def attestation_text(self) -> str:
        """The provenance table's attestation cell, in Markdown."""
        check = self.attestation
        if check is None or check.state == "missing":
            return "not attested"
        if check.build is None:
            what = "cannot be verified" if check.state == "unavailable" else "refused"
            return f"❌ {what}: {escape_markdown('; '.join(check.reasons))}"
        build = check.build
        workflow = Link(escape_markdown(build.workflow), self.attestations_url).markdown()
        commit = f", commit {build.commit[:12]}" if build.commit else ""
        return f"✅ verified: workflow {workflow}, repository {build.repository}{commit}"


def previous_git_tags(previous_tag: str, release_tag: str | None, version: str) -> list[str]:
    """Git tags the previously live image tag may have been released under, best first:
    spelled like the new release's tag (`1.4.1` beside `web-v1.4.2` → `web-v1.4.1`), then as
    written, then with a `v`."""
    bare = previous_tag.removeprefix("v")
    guesses = []
    if release_tag and release_tag.endswith(version):
        guesses.append(release_tag[: len(release_tag) - len(version)] + bare)
    guesses += [previous_tag, f"v{bare}"]
    return list(dict.fromkeys(guesses))


def compare_text(base: str, head: str, ahead_by: int | None, behind_by: int | None) -> str:
    """`v1.4.1...v1.4.2 (3 commits)`; a rollback reads `(2 commits back)`."""
    if ahead_by is None:
        return f"{base}...{head}"
    if ahead_by == 0 and behind_by:
        count = f"{behind_by} commit{'s' if behind_by != 1 else ''} back"
    else:
        count = f"{ahead_by} commit{'s' if ahead_by != 1 else ''}"
    return f"{base}...{head} ({count})"
