"""Which sources' releases a resync pass reads (pure logic; the HTTP counts are in
tests/flows/test_scale_counts.py)."""

from __future__ import annotations

from bot.promotion.resync.release_polls import MOVED_PER_PASS, ROTATION_PER_PASS, ReleasePolls

SOURCES = [f"acme/svc-{n:03d}" for n in range(100)]
PUSHED = {source: "2026-01-01T00:00:00Z" for source in SOURCES}


def read_all(polls: ReleasePolls, due: list[str], pushed: dict[str, str]) -> None:
    for source in due:
        polls.read(source, pushed.get(source, ""))


def test_sources_never_read_come_first_at_most_a_pass_full() -> None:
    polls = ReleasePolls()
    first = polls.due(SOURCES, PUSHED)
    assert first == SOURCES[:MOVED_PER_PASS]
    read_all(polls, first, PUSHED)
    second = polls.due(SOURCES, PUSHED)
    # the next never-read ones, and the rotation among those read (in the policy's order)
    assert set(SOURCES[MOVED_PER_PASS:2 * MOVED_PER_PASS]) <= set(second)
    assert len(set(second) & set(first)) == ROTATION_PER_PASS
    assert second == [source for source in SOURCES if source in second]


def test_an_idle_pass_reads_only_the_rotation_and_every_source_in_turn() -> None:
    polls = ReleasePolls()
    while any(due := polls.due(SOURCES, PUSHED)) and len(due) > ROTATION_PER_PASS:
        read_all(polls, due, PUSHED)
    read_all(polls, due, PUSHED)
    seen: set[str] = set(due)
    passes = 1
    while len(seen) < len(SOURCES):
        due = polls.due(SOURCES, PUSHED)
        assert len(due) == ROTATION_PER_PASS
        read_all(polls, due, PUSHED)
        seen.update(due)
        passes += 1
    assert passes <= len(SOURCES) // ROTATION_PER_PASS + 1


def test_a_source_whose_pushed_at_moved_is_read_next_pass() -> None:
    polls = ReleasePolls()
    for _ in range(5):
        read_all(polls, polls.due(SOURCES, PUSHED), PUSHED)
    moved = {**PUSHED, "acme/svc-077": "2026-01-01T00:10:00Z"}
    assert "acme/svc-077" in polls.due(SOURCES, moved)


def test_a_source_without_a_settled_pushed_at_is_read_every_pass() -> None:
    polls = ReleasePolls()
    for _ in range(len(SOURCES) // MOVED_PER_PASS + 1):  # every source read once
        read_all(polls, polls.due(SOURCES, PUSHED), PUSHED)
    unknown = {**PUSHED, "acme/svc-042": ""}  # pushed too recently to stand for its tags
    for _ in range(6):
        due = polls.due(SOURCES, unknown)
        assert "acme/svc-042" in due
        assert len(due) == ROTATION_PER_PASS + 1  # it, and the rotation
        read_all(polls, due, unknown)
