"""Slash commands: the pure parts (rollback choice, replies, reachability), no server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.commands.parse import HELP_TEXT, CommandError, parse_commands
from bot.domain.gate.model import Verdict
from bot.domain.policy import PolicyIssue
from bot.handlers.commands import from_a_bot
from bot.promotion.commands.replies import (
    Reply,
    describe_result,
    describe_verdict,
    permission_refusal,
    policy_refusal,
)
from bot.promotion.opening.opener import OpenResult
from bot.promotion.policies import BrokenPolicy
from bot.promotion.watching.rollback import (
    MAX_HISTORY_COMMITS,
    Pinned,
    choose_rollback,
    live_periods,
    rollback_note,
)

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
D1, D2, D3 = ("sha256:" + c * 64 for c in "123")


def pin(n: int, digest: str | None, tag: str | None) -> Pinned:
    sha = f"{n:040x}"
    return Pinned(sha, T0 + timedelta(hours=n), f"https://github.com/acme/deploy/commit/{sha}",
                  tag, digest)


# Newest first, as GitHub lists commits: D3 now, D2 before it (two commits), D1 first,
# and an unpinned 0.9.0 at the very beginning.
HISTORY = [pin(5, D3, "1.2.0"), pin(4, D2, "1.1.0"), pin(3, D2, "1.1.0"), pin(2, D1, "1.0.0"),
           pin(1, None, "0.9.0")]


def test_live_periods_group_consecutive_commits() -> None:
    periods = live_periods(HISTORY)
    assert [(p.digest, p.tag) for p in periods] == [
        (D3, "1.2.0"), (D2, "1.1.0"), (D1, "1.0.0"), (None, "0.9.0")]
    current, previous = periods[0], periods[1]
    assert current.end is None and current.start.sha == HISTORY[0].sha
    assert previous.start.sha == HISTORY[2].sha  # the commit that set it
    assert previous.end is not None and previous.end.sha == HISTORY[0].sha  # replaced by
    assert all(p.complete for p in periods)
    assert not live_periods(HISTORY, truncated=True)[-1].complete


def test_a_digest_that_came_back_is_two_periods() -> None:
    periods = live_periods([pin(3, D1, "1.0.0"), pin(2, D2, "1.1.0"), pin(1, D1, "1.0.0")])
    assert [p.digest for p in periods] == [D1, D2, D1]
    assert choose_rollback(periods, "production", "web").period == periods[1]
    refusal = choose_rollback(periods, "production", "web", "1.0.0").refusal
    assert refusal == "web 1.0.0 is what production runs now; nothing to roll back"


def test_a_retagged_digest_that_runs_now_is_refused() -> None:
    periods = live_periods([pin(2, D1, "1.0.1"), pin(1, D1, "1.0.0")])
    assert len(periods) == 1  # one digest, one period, whatever its tags
    periods = live_periods([pin(3, D1, "1.0.1"), pin(2, D2, "1.1.0"), pin(1, D1, "1.0.0")])
    refusal = choose_rollback(periods, "production", "web", "1.0.0").refusal
    assert refusal == "web 1.0.0 is what production runs now; nothing to roll back"


def test_an_untagged_period_is_named_by_its_digest() -> None:
    assert live_periods([pin(1, D1, None)])[0].version == D1[:19]


def test_choose_the_previous_digest() -> None:
    choice = choose_rollback(live_periods(HISTORY), "production", "web")
    assert choice.period is not None and choice.period.digest == D2
    assert choice.period.version == "1.1.0"


@pytest.mark.parametrize(("wanted", "wanted_digest", "expected"), [
    ("1.0.0", None, D1), ("v1.0.0", None, D1), (D1, None, D1), (D2, None, D2),
    ("retagged", D1, D1),  # a tag the registry resolves to a digest that ran there
])
def test_choose_a_given_version(wanted: str, wanted_digest: str | None, expected: str) -> None:
    choice = choose_rollback(live_periods(HISTORY), "production", "web", wanted, wanted_digest)
    assert choice.refusal is None and choice.period is not None
    assert choice.period.digest == expected


@pytest.mark.parametrize(("wanted", "message"), [
    ("1.2.0", "web 1.2.0 is what production runs now; nothing to roll back"),
    (D3, f"web {D3[:19]} is what production runs now; nothing to roll back"),
    ("0.9.0", "web 0.9.0 ran in production but was not pinned by digest"),
    ("2.0.0", "web 2.0.0 was not live in production in the last "
              f"{MAX_HISTORY_COMMITS} changes of its file"),
])
def test_given_versions_that_cannot_be_rolled_back_to(wanted: str, message: str) -> None:
    refusal = choose_rollback(live_periods(HISTORY), "production", "web", wanted).refusal
    assert refusal is not None and refusal.startswith(message)


def test_nothing_to_roll_back_to() -> None:
    assert choose_rollback([], "staging", "web").refusal == (
        "the history of web's file in staging is empty")
    only = live_periods([pin(2, D1, "1.0.0"), pin(1, None, "0.9.0")])
    refusal = choose_rollback(only, "staging", "web").refusal
    assert refusal is not None and refusal.startswith("no earlier digest of web")


def test_rollback_note_names_the_commits() -> None:
    periods = live_periods(HISTORY)
    note = rollback_note(periods[1], "production")
    assert "it ran in production from [`0000000`]" in note
    assert "(2026-11-30 13:00 UTC) to [`0000000`]" in note
    truncated = live_periods(HISTORY[:2], truncated=True)
    assert "from before [`0000000`]" in rollback_note(truncated[-1], "production")
    assert "until now" in rollback_note(periods[0], "production")


def test_describe_results() -> None:
    opened = OpenResult("opened", "opened", 7, "u", merged=True)
    assert describe_result(opened, "web", "1.0.0", "staging") == (
        "✅ opened #7: promotion of web 1.0.0 to staging. It was merged right away "
        "(auto-merge).")
    assert describe_result(OpenResult("exists", "already open:", 7), "web", "1.0.0",
                           "production", rollback=True) == (
        "ℹ️ the rollback of web 1.0.0 to production is already open: #7.")
    assert describe_result(OpenResult("live", "web 1.0.0 is already live"), "web", "1.0.0",
                           "production") == "ℹ️ web 1.0.0 is already live; nothing to open."
    assert describe_result(OpenResult("skipped", "closed without merging; `/promote` opens "
                                      "it again:", 4), "web", "1", "p").startswith(
        "⏭️ not opened: closed without merging; `/promote` opens it again: #4")
    assert describe_result(OpenResult("refused", "not admitted"), "web", "1", "p") == (
        "❌ not opened: not admitted.")


def test_describe_verdicts() -> None:
    waiting = Verdict("in_progress", None, "Soaking until 11:00", (), None)
    assert describe_verdict(waiting).endswith("⏳ **in progress** — Soaking until 11:00")
    passed = Verdict("completed", "success", "All conditions hold", (), None)
    assert "✅ **success** — All conditions hold" in describe_verdict(passed)


def test_reply_echoes_each_command_and_adds_help_once() -> None:
    parsed = parse_commands("/promte x\n/help\n/hold " + "`x` " * 60, services=["web"],
                            environments=["staging"])
    reply = Reply(42)
    for item in parsed:
        reply.add(item, "❌ wrong" if isinstance(item, CommandError) else "ok")
    reply.with_help = True
    body = reply.render()
    assert body.startswith("<!-- conveyor:reply 42 -->\n\n**`/promte x`** ❌ wrong")
    assert body.count(HELP_TEXT) == 1 and body.endswith(HELP_TEXT)
    assert "**`/hold 'x' 'x'" in body and "…`**" in body  # no backtick breaks out, cut short


def test_reply_is_cut_below_githubs_limit() -> None:
    reply = Reply(1)
    for _ in range(12):
        reply.add(None, "x" * 10_000)
    body = reply.render()
    assert 65_000 < len(body) <= 65_536
    assert body.startswith("<!-- conveyor:reply 1 -->")
    assert body.endswith("(shortened to fit GitHub's limit of 65,536 characters)")


def test_refusals() -> None:
    text = permission_refusal(3, "carol", "acme/deploy", "none")
    assert "Sorry @carol" in text and "you have no access" in text
    repo = BrokenPolicy("acme/deploy", issues=[
        PolicyIssue(".github/conveyor.yml", 3, 1, "unknown key `envs`")])
    text = policy_refusal(3, repo)
    assert "`.github/conveyor.yml` line 3: unknown key \\`envs\\`" in text
    many = BrokenPolicy("acme/deploy", issues=[
        PolicyIssue(".github/conveyor.yml", n, 1, "bad") for n in range(25)])
    assert "… and 5 more" in policy_refusal(3, many)


def test_bots_are_recognised() -> None:
    assert from_a_bot({"login": "conveyor[bot]", "type": "Bot"}, "conveyor[bot]")
    assert from_a_bot({"login": "renovate[bot]", "type": "User"}, "")
    assert from_a_bot({"login": "Conveyor-Staging", "type": "User"}, "conveyor-staging")
    assert not from_a_bot({"login": "alice", "type": "User"}, "conveyor[bot]")
    assert not from_a_bot(None, "")
