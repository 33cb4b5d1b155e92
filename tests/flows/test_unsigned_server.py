"""A GitHub Enterprise Server without web commit signing: GitHub signs none of the commits
Conveyor makes, nor its merges. Conveyor knows its own commits by its receipt check run, and a
commit that only claims to be the bot's (its e-mail in a pushed commit) is still nobody's.

The whole behaviour suite also runs against such a server in CI (`CONVEYOR_TEST_SIGNING=off`);
these tests pin the receipt itself, whichever way the suite runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.names import RECEIPT_CHECK
from bot.promotion.authorship.receipts import signed_by_github
from bot.promotion.authorship.trust import trusted_pull
from tests.harness import World, close_world, make_world

BOT = "conveyor[bot]"
PROD = "apps/web/overlays/prod/kustomization.yaml"


@pytest.fixture
async def unsigned() -> AsyncIterator[World]:
    built = await make_world(signing=False)
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == []


async def test_conveyors_commits_are_unsigned_yet_its_own(unsigned: World) -> None:
    world = unsigned
    await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    assert staging["merged"]
    commit = world.emulator.commit(world.repo, staging["head"]["sha"])
    assert commit["commit"]["verification"]["verified"] is False
    receipts = world.emulator.check_runs(world.repo, staging["head"]["sha"], RECEIPT_CHECK)
    assert [(r["conclusion"], r["app"]["slug"]) for r in receipts] == [("neutral", "conveyor")]

    # /promote on the merged staging PR needs Conveyor to trust it: it does.
    await world.emulator.comment(world.repo, staging["number"], "alice", "/promote production")
    await world.settle()
    production = world.pull("Promote web 1.0.0 to production", state="open")
    assert world.emulator.check_runs(world.repo, production["head"]["sha"], RECEIPT_CHECK)


async def test_a_commit_that_only_claims_to_be_the_bots_is_not_conveyors(
        unsigned: World) -> None:
    world = unsigned
    await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    await world.emulator.comment(world.repo, staging["number"], "alice", "/promote production")
    await world.settle()
    production = world.pull("Promote web 1.0.0 to production", state="open")
    made = production["head"]["sha"]
    forged = "sha256:" + "e" * 64
    text = world.emulator.file(world.repo, PROD, made)
    assert text is not None
    # A writer pushes a commit with the bot's e-mail and trailers for another digest.
    await world.emulator.push_files(
        world.repo, {PROD: text + "# tuned\n"}, branch=production["head"]["ref"], author=BOT,
        message=("Promote web 1.0.0 to production\n\nConveyor-Service: web\n"
                 f"Conveyor-Environment: production\nConveyor-Digest: {forged}\n"))
    await world.settle()
    pushed = world.pull("Promote web 1.0.0 to production", state="open")
    assert world.emulator.commit(world.repo, pushed["head"]["sha"])["author"]["login"] == BOT
    gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
    trusted = await trusted_pull(gh, world.repo, pushed, world.conveyor.ctx.bot_login)
    assert trusted is not None
    assert (trusted.sha, trusted.head) == (made, False)  # Conveyor's own commit, not the push
    assert trusted.digest != forged


async def test_each_commit_gets_a_receipt_only_when_github_did_not_sign_it() -> None:
    world = await make_world(signing=True)
    try:
        await world.release("web", "1.0.0")
        signed = world.pull("Promote web 1.0.0 to staging")
        head = world.emulator.commit(world.repo, signed["head"]["sha"])
        assert head["commit"]["verification"]["verified"] is True
        assert world.emulator.check_runs(world.repo, signed["head"]["sha"], RECEIPT_CHECK) == []

        world.emulator.world.web_commit_signing = False  # the administrator turns signing off
        await world.release("web", "1.1.0")
        unsigned = world.pull("Promote web 1.1.0 to staging")
        assert world.emulator.check_runs(world.repo, unsigned["head"]["sha"], RECEIPT_CHECK)

        # both are Conveyor's: /promote carries each digest on
        for staging, version in ((signed, "1.0.0"), (unsigned, "1.1.0")):
            await world.emulator.comment(world.repo, staging["number"], "alice",
                                         "/promote production")
            await world.settle()
            assert world.pull(f"Promote web {version} to production", state="all")
        gh = await world.conveyor.ctx.clients.installation(world.demo.installation_id)
        for staging in (signed, unsigned):
            trusted = await trusted_pull(gh, world.repo, staging, world.conveyor.ctx.bot_login)
            assert trusted is not None and trusted.sha == staging["head"]["sha"]
        assert world.emulator.violations == []
    finally:
        await close_world(world)


def test_only_a_verified_answer_stands_for_githubs_signature() -> None:
    assert signed_by_github({"sha": "a", "verification": {"verified": True, "reason": "valid"}})
    for answer in ({"sha": "a", "verification": {"verified": False, "reason": "unsigned"}},
                   {"sha": "a", "verification": {"verified": "true"}},
                   {"sha": "a", "verification": None}, {"sha": "a"}):
        assert not signed_by_github(answer)  # an older server's answer gets the receipt
