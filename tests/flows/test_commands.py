"""Slash commands over HTTP: the real bot against the emulator."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import gidgethub
import pytest

from bot.domain.commands.parse import HELP_TEXT
from bot.domain.promotions.marker import parse_marker
from bot.github.client import ConveyorGitHubAPI
from bot.promotion.commands.replies import Reply
from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY, digest_of
from tests.harness import World, close_world, hand_pr, make_world, pinned_kustomization

STAGING = "apps/web/overlays/staging/kustomization.yaml"
PROD = "apps/web/overlays/prod/kustomization.yaml"
BOT = "conveyor[bot]"


async def say(world: World, number: int, body: str, user: str = "alice") -> dict[str, Any]:
    """`user` comments `body` on #number; returns the comment once the bot is done."""
    posted = await world.emulator.comment(world.repo, number, user, body)
    await world.settle()
    return posted


def bot_comments(world: World, number: int) -> list[str]:
    return [c["body"] for c in world.emulator.comments(world.repo, number)
            if c["user"]["login"] == BOT]


def replies_to(world: World, number: int, posted: dict[str, Any]) -> list[str]:
    marker = f"<!-- conveyor:reply {posted['id']} -->"
    return [body for body in bot_comments(world, number) if marker in body]


def reply_to(world: World, number: int, posted: dict[str, Any]) -> str:
    found = replies_to(world, number, posted)
    assert len(found) == 1, bot_comments(world, number)
    return found[0]


def reactions(world: World, posted: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["content"], r["user"]["login"])
            for r in world.emulator.reactions(world.repo, posted["id"])]


async def issue(world: World, title: str = "Deploy questions") -> int:
    created = await world.emulator.open_issue(world.repo, title, author="alice")
    await world.settle()
    return int(created["number"])


async def staged(world: World, version: str = "1.0.0") -> tuple[str, dict[str, Any]]:
    digest = await world.release("web", version)
    pr = world.pull(f"Promote web {version} to staging")
    assert pr["merged"]
    return digest, pr


async def test_help_gets_one_reply_and_no_reaction(world: World) -> None:
    number = await issue(world)
    world.emulator.requests.reset()
    posted = await say(world, number, "/help")
    assert reactions(world, posted) == []  # the reply is the acknowledgement
    body = reply_to(world, number, posted)
    assert HELP_TEXT in body
    assert len(bot_comments(world, number)) == 1
    assert [(e.method, e.path) for e in world.emulator.requests.entries
            if e.method != "GET" and e.installation_id] == [
        ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")]


async def test_a_reply_delayed_by_a_failure_gets_eyes_first(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    number = await issue(world)
    posting = Reply.post
    failures = [gidgethub.GitHubBroken(HTTPStatus.BAD_GATEWAY)]

    async def flaky(reply: Reply, gh: Any, repo: str, at: int) -> None:
        if failures:  # GitHub answers 502 to the first reply, as a job's last retry sees it
            raise failures.pop()
        await posting(reply, gh, repo, at)

    monkeypatch.setattr(Reply, "post", flaky)
    posted = await say(world, number, "/help")
    assert failures == []
    assert reactions(world, posted) == [("eyes", BOT)]  # seen, while the job was retried
    assert HELP_TEXT in reply_to(world, number, posted)  # the retried job replied, once


async def test_a_reaction_github_refuses_leaves_the_retry_to_reply(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    number = await issue(world)
    posting, reacting = Reply.post, ConveyorGitHubAPI.post
    failures = [gidgethub.GitHubBroken(HTTPStatus.BAD_GATEWAY)]

    async def flaky(reply: Reply, gh: Any, repo: str, at: int) -> None:
        if failures:
            raise failures.pop()
        await posting(reply, gh, repo, at)

    async def refused(gh: ConveyorGitHubAPI, url: str, *args: Any, **kwargs: Any) -> Any:
        if url.endswith("/reactions"):  # an organisation that limits reactions, say
            raise gidgethub.BadRequest(HTTPStatus.FORBIDDEN)
        return await reacting(gh, url, *args, **kwargs)

    monkeypatch.setattr(Reply, "post", flaky)
    monkeypatch.setattr(ConveyorGitHubAPI, "post", refused)
    posted = await say(world, number, "/help")
    assert reactions(world, posted) == []
    assert HELP_TEXT in reply_to(world, number, posted)


async def test_comment_without_commands_gets_nothing(world: World) -> None:
    number = await issue(world)
    posted = await say(world, number, "Looks good. See /usr/bin/env and\n> /promote production")
    assert reactions(world, posted) == []
    assert bot_comments(world, number) == []


async def test_promote_env_on_a_merged_promotion_pr(world: World) -> None:
    digest, staging = await staged(world)
    posted = await say(world, staging["number"], "/promote production", user="alice")
    production = world.pull("Promote web 1.0.0 to production", state="open")
    assert production["head"]["ref"] == f"conveyor/production/web-{digest[7:19]}"
    marker = parse_marker(production["body"])
    assert marker is not None
    assert (marker.digest, marker.environment, marker.requester) == (digest, "production",
                                                                     "alice")
    assert marker.upstream_pr == staging["number"]
    body = reply_to(world, staging["number"], posted)
    assert f"✅ opened #{production['number']}" in body
    assert reactions(world, posted) == []


async def test_promote_env_repeated_links_the_existing_pr(world: World) -> None:
    _, staging = await staged(world)
    await say(world, staging["number"], "/promote production")
    again = await say(world, staging["number"], "/promote production", user="bob")
    production = world.pull("Promote web 1.0.0 to production", state="open")
    assert f"already open: #{production['number']}" in reply_to(world, staging["number"], again)
    assert len(world.open_pulls()) == 1


async def test_promote_env_on_an_open_promotion_pr(world: World) -> None:
    digest, _ = await staged(world)
    await say(world, (await issue(world)), "/promote web 1.0.0 production")
    production = world.pull("Promote web 1.0.0 to production", state="open")
    # Production is the last environment: nothing comes after it.
    posted = await say(world, production["number"], "/promote staging")
    body = reply_to(world, production["number"], posted)
    assert "staging does not come after production" in body
    assert "no environment comes after production" in body
    assert len(world.open_pulls()) == 1
    assert parse_marker(production["body"]).digest == digest  # type: ignore[union-attr]


async def test_promote_env_to_its_own_environment_is_refused(world: World) -> None:
    _, staging = await staged(world)
    posted = await say(world, staging["number"], "/promote staging")
    body = reply_to(world, staging["number"], posted)
    assert "this PR already promotes web 1.0.0 to staging" in body
    assert world.open_pulls() == []


async def test_promote_env_with_an_unknown_environment_gets_the_parser_message(
        world: World) -> None:
    _, staging = await staged(world)
    posted = await say(world, staging["number"], "/promote prod")
    body = reply_to(world, staging["number"], posted)
    assert ("unknown environment 'prod'; environments are: staging, production; "
            "did you mean 'production'?") in body
    assert HELP_TEXT in body
    assert world.open_pulls() == []


async def test_promote_env_on_a_hand_written_pr_is_refused(world: World) -> None:
    digest, _ = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    posted = await say(world, pr["number"], "/promote production")
    body = reply_to(world, pr["number"], posted)
    assert f"#{pr['number']} is not a promotion PR Conveyor opened" in body
    assert "/promote <service> <tag-or-digest> <env>" in body
    assert len(world.open_pulls()) == 1


async def test_promote_env_on_an_issue_asks_for_the_service(world: World) -> None:
    await staged(world)
    number = await issue(world)
    posted = await say(world, number, "/promote production")
    assert "needs the service: `/promote production <service>`" in reply_to(
        world, number, posted)
    assert world.open_pulls() == []


async def test_promote_env_and_service_from_an_issue_takes_what_staging_runs(
        world: World) -> None:
    digest, _ = await staged(world)
    number = await issue(world)
    posted = await say(world, number, "/promote production web", user="bob")
    production = world.pull("Promote web 1.0.0 to production", state="open")
    assert f"#{production['number']}" in reply_to(world, number, posted)
    marker = parse_marker(production["body"])
    assert marker is not None and marker.digest == digest


async def test_promote_by_tag_from_an_issue(world: World) -> None:
    digest, _ = await staged(world)
    number = await issue(world)
    posted = await say(world, number, "/promote web v1.0.0 production", user="bob")
    production = world.pull("Promote web 1.0.0 to production", state="open")
    marker = parse_marker(production["body"])
    assert marker is not None
    assert (marker.digest, marker.tag, marker.requester) == (digest, "1.0.0", "bob")
    assert marker.release_tag == "v1.0.0"
    tag_commit = world.emulator.commit("acme/web", "v1.0.0")["sha"]
    assert marker.source_sha == tag_commit
    text = world.emulator.file(world.repo, PROD, production["head"]["sha"])
    assert text is not None and f"digest: {digest}" in text
    assert f"✅ opened #{production['number']}" in reply_to(world, number, posted)


async def test_promote_by_digest_from_an_issue(world: World) -> None:
    digest, _ = await staged(world)
    number = await issue(world)
    posted = await say(world, number, f"/promote web {digest} production")
    production = world.pull("Promote web 1.0.0 to production", state="open")
    assert parse_marker(production["body"]).tag == "1.0.0"  # type: ignore[union-attr]
    assert f"✅ opened #{production['number']}" in reply_to(world, number, posted)


async def test_promote_unknown_tag_or_digest_is_refused(world: World) -> None:
    await staged(world)
    number = await issue(world)
    posted = await say(world, number, "/promote web 7.7.7 production\n"
                                      f"/promote web sha256:{'ab' * 32} production")
    body = reply_to(world, number, posted)
    assert "`ghcr.io/acme/web` has no published image tagged `7.7.7`, `v7.7.7`" in body
    assert "no published version of `ghcr.io/acme/web` has the digest `sha256:abababab" in body
    assert world.open_pulls() == []


async def test_read_only_user_is_refused_politely(world: World) -> None:
    _, staging = await staged(world)
    posted = await say(world, staging["number"], "/promote production", user="carol")
    body = reply_to(world, staging["number"], posted)
    assert "Sorry @carol" in body
    assert "write, maintain or admin permission on acme/deploy" in body
    assert "you have read access" in body
    assert reactions(world, posted) == []
    assert world.open_pulls() == []


async def test_comments_by_bots_produce_nothing(world: World) -> None:
    number = await issue(world)
    own = await say(world, number, "/help", user=BOT)
    other = await say(world, number, "/promote web 1.0.0 production", user="argocd[bot]")
    assert reactions(world, own) == [] and reactions(world, other) == []
    assert [c["user"]["login"] for c in world.emulator.comments(world.repo, number)] == [
        BOT, "argocd[bot]"]


async def test_edited_comments_are_not_rerun(world: World) -> None:
    number = await issue(world)
    plain = await say(world, number, "thinking about it")
    await world.emulator.edit_comment(world.repo, plain["id"], "/help", user="alice")
    await world.settle()
    assert bot_comments(world, number) == []
    command = await say(world, number, "/status")
    await world.emulator.edit_comment(world.repo, command["id"], "/status web", user="alice")
    await world.settle()
    assert len(bot_comments(world, number)) == 1


async def test_comment_redelivered_after_a_restart_is_answered_once(world: World) -> None:
    number = await issue(world)
    posted = await say(world, number, "/help")
    world.conveyor.door.seen.clear()  # a restarted bot no longer knows the delivery id
    delivery = next(d for d in reversed(world.emulator.deliveries)
                    if d.event == "issue_comment" and d.payload["comment"]["id"] == posted["id"])
    assert await world.emulator.redeliver(delivery.id) == 202
    await world.settle()
    assert len(replies_to(world, number, posted)) == 1


async def production_pr(world: World) -> dict[str, Any]:
    _, staging = await staged(world)
    await say(world, staging["number"], "/promote production")
    return world.pull("Promote web 1.0.0 to production", state="open")


def labels(world: World, number: int) -> list[str]:
    pr = next(p for p in world.emulator.pulls(world.repo, state="all") if p["number"] == number)
    return sorted(label["name"] for label in pr["labels"])


async def test_hold_and_unhold(world: World) -> None:
    pr = await production_pr(world)
    posted = await say(world, pr["number"], "/hold waiting for QA_run of @bob")
    assert "conveyor/hold" in labels(world, pr["number"])
    body = reply_to(world, pr["number"], posted)
    assert "<!-- conveyor:hold --> Reason: waiting for QA_run of @\u2060bob" in body
    run = world.gate(pr)
    assert run["conclusion"] == "failure"
    assert run["output"]["title"].startswith("On hold: waiting for QA_run of @")

    posted = await say(world, pr["number"], "/unhold", user="bob")
    assert "conveyor/hold" not in labels(world, pr["number"])
    assert "hold lifted" in reply_to(world, pr["number"], posted)
    run = world.gate(pr)
    assert "hold" not in run["output"]["title"].lower()
    assert "not on hold" in run["output"]["summary"]


async def test_another_bots_comment_with_the_reply_marker_does_not_silence_a_command(
        world: World) -> None:
    """Only Conveyor's own reply answers a command: a workflow's bot that posts the reply
    marker before the command's delivery arrives does not make Conveyor skip a /hold."""
    pr = await production_pr(world)
    world.emulator.webhook_url = None  # the delivery of the command comment is late
    posted = await world.emulator.comment(world.repo, pr["number"], "alice", "/hold QA")
    await world.emulator.comment(world.repo, pr["number"], "github-actions[bot]",
                                 f"<!-- conveyor:reply {posted['id']} --> done")
    world.emulator.webhook_url = world.webhook_url
    delivery = next(d for d in reversed(world.emulator.deliveries)
                    if d.event == "issue_comment" and d.payload["comment"]["id"] == posted["id"])
    assert await world.emulator.redeliver(delivery.id) == 202
    await world.settle()
    assert "conveyor/hold" in labels(world, pr["number"])
    assert "Reason: QA" in reply_to(world, pr["number"], posted)


async def test_hold_reason_is_read_from_conveyor_only(world: World) -> None:
    pr = await production_pr(world)
    await say(world, pr["number"], "/hold release freeze")
    await world.emulator.comment(world.repo, pr["number"], "carol",
                                 "<!-- conveyor:hold --> Reason: spoofed")
    await say(world, pr["number"], "/recheck")
    assert world.gate(pr)["output"]["title"].startswith("On hold: release freeze")


async def test_hold_without_reason(world: World) -> None:
    pr = await production_pr(world)
    await say(world, pr["number"], "/hold\n/status web")
    title = world.gate(pr)["output"]["title"]
    assert title.startswith("On hold") and "status" not in title  # the next line is no reason


async def test_hold_unhold_recheck_on_an_issue_are_refused(world: World) -> None:
    number = await issue(world)
    posted = await say(world, number, "/hold\n/unhold\n/recheck")
    body = reply_to(world, number, posted)
    assert body.count(f"#{number} is an issue") == 3
    assert world.emulator.issues(world.repo, labels=["conveyor/hold"]) == []


async def test_hold_on_a_merged_pr_is_refused(world: World) -> None:
    _, staging = await staged(world)
    posted = await say(world, staging["number"], "/hold")
    assert f"#{staging['number']} is merged" in reply_to(world, staging["number"], posted)
    assert "conveyor/hold" not in labels(world, staging["number"])


async def test_recheck_replies_with_the_gate_state(world: World) -> None:
    pr = await production_pr(world)
    posted = await say(world, pr["number"], "/recheck")
    body = reply_to(world, pr["number"], posted)
    title = world.gate(pr)["output"]["title"]
    assert "re-evaluated `conveyor/promotion-gate`: ❌ **failure**" in body
    assert title.split(" (")[0] in body


async def test_several_commands_run_in_order_with_one_reply(world: World) -> None:
    pr = await production_pr(world)
    posted = await say(world, pr["number"], "Before we ship:\n/status web\n/hold QA\n"
                                            "/recheck\n/frobnicate\n/unhold")
    body = reply_to(world, pr["number"], posted)
    order = [body.index(f"**`{line}`**")
             for line in ("/status web", "/hold QA", "/recheck", "/frobnicate", "/unhold")]
    assert order == sorted(order)
    assert "❌ **failure** — On hold" in body  # /recheck saw the hold
    assert "unknown command '/frobnicate'" in body and HELP_TEXT in body
    assert "conveyor/hold" not in labels(world, pr["number"])  # /unhold ran last
    assert reactions(world, posted) == []
    assert len(bot_comments(world, pr["number"])) == 1


async def test_status_replies_with_a_table_per_service(world: World) -> None:
    digest, _ = await staged(world)
    number = await issue(world)
    posted = await say(world, number, "/status")
    body = reply_to(world, number, posted)
    assert "### web" in body and "### api" in body
    assert f"`{digest[:19]}`" in body
    assert "| staging | `1.0.0` |" in body
    only_web = await say(world, number, "/status web")
    body = reply_to(world, number, only_web)
    assert "### web" in body and "### api" not in body


async def test_a_failing_command_says_so_and_the_next_one_runs(world: World,
                                                                monkeypatch: Any) -> None:
    await staged(world)

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("registry exploded")

    monkeypatch.setattr(world.conveyor.ctx.images, "find_by_tags", broken)
    number = await issue(world)
    posted = await say(world, number, "/promote web 1.0.0 production\n/status api")
    body = reply_to(world, number, posted)
    assert "⚠️ failed with an internal error (RuntimeError)" in body
    assert "registry exploded" not in body and "Traceback" not in body
    assert "### api" in body
    assert world.open_pulls() == []


async def production_history(world: World) -> tuple[str, str, list[str]]:
    """Production ran 1.0.0, then 1.1.0 (pushed to main an hour apart): the two digests and
    the commits that set them."""
    first, second = digest_of("web:1.0.0"), digest_of("web:1.1.0")
    shas = []
    for version, digest in (("1.0.0", first), ("1.1.0", second)):
        world.clock.advance(hours=1)
        shas.append(await world.emulator.push_files(
            world.repo, {PROD: pinned_kustomization(version, digest)},
            message=f"production: web {version}", author="bob"))
    await world.settle()
    return first, second, shas


async def test_rollback_to_the_previous_digest(world: World) -> None:
    first, _, shas = await production_history(world)
    number = await issue(world)
    posted = await say(world, number, "/rollback web production", user="dave")
    pr = world.pull("Roll back web in production to 1.0.0 (from 1.1.0)", state="open")
    assert pr["head"]["ref"] == f"conveyor/rollback/production/web-{first[7:19]}"
    assert "rollback" in labels(world, pr["number"])
    marker = parse_marker(pr["body"])
    assert marker is not None
    assert (marker.kind, marker.digest, marker.requester) == ("rollback", first, "dave")
    assert f"it ran in production from [`{shas[0][:7]}`]" in pr["body"]
    assert f"to [`{shas[1][:7]}`]" in pr["body"]
    text = world.emulator.file(world.repo, PROD, pr["head"]["sha"])
    assert text is not None and f"digest: {first}" in text and "1.0.0" in text
    assert f"✅ opened #{pr['number']}: rollback of web 1.0.0 to production" in reply_to(
        world, number, posted)
    summary = world.gate(pr)["output"]["summary"]
    assert "ran in production" in summary  # the history is the rollback's evidence

    again = await say(world, number, "/rollback web production 1.0.0")
    assert f"already open: #{pr['number']}" in reply_to(world, number, again)


async def test_rollback_to_a_given_tag_or_digest(world: World) -> None:
    first, second, _ = await production_history(world)
    world.clock.advance(hours=1)
    third = digest_of("web:1.2.0")
    await world.emulator.push_files(world.repo, {PROD: pinned_kustomization("1.2.0", third)},
                                    message="production: web 1.2.0", author="bob")
    await world.settle()
    number = await issue(world)
    await say(world, number, "/rollback web production v1.0.0")
    pr = world.pull("Roll back web in production to 1.0.0 (from 1.2.0)", state="open")
    assert parse_marker(pr["body"]).digest == first  # type: ignore[union-attr]
    await say(world, number, f"/rollback web production {second}")
    pr = world.pull("Roll back web in production to 1.1.0 (from 1.2.0)", state="open")
    assert parse_marker(pr["body"]).digest == second  # type: ignore[union-attr]
    assert len(world.open_pulls()) == 2  # a rollback never supersedes another PR


async def test_rollback_refusals(world: World) -> None:
    _, second, _ = await production_history(world)
    number = await issue(world)
    posted = await say(world, number, "/rollback web production 9.9.9\n"
                                      f"/rollback web production {second}\n"
                                      "/rollback web production 0.9.0\n"
                                      "/rollback api production\n"
                                      "/rollback web prod")
    body = reply_to(world, number, posted)
    assert "web 9.9.9 was not live in production" in body
    assert f"web {second[:19]} is what production runs now; nothing to roll back" in body
    assert "web 0.9.0 ran in production but was not pinned by digest" in body
    assert "no earlier digest of api was live in production" in body
    assert "unknown environment 'prod'" in body and HELP_TEXT in body
    assert world.open_pulls() == []


async def test_invalid_policy_is_reported() -> None:
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": "version: 1\n"
                                    "services: []\nenvironments: nope\n"})
    try:
        number = await issue(world)
        posted = await say(world, number, "/status")
        body = reply_to(world, number, posted)
        assert "Conveyor cannot run commands in acme/deploy" in body
        assert "`.github/conveyor.yml` line " in body
        assert reactions(world, posted) == []
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_broken_policy_change_keeps_the_last_valid_one(world: World) -> None:
    number = await issue(world)
    await say(world, number, "/help")  # the bot reads the valid policy
    await world.emulator.push_files(world.repo, {".github/conveyor.yml": "version: [\n"},
                                    message="oops", author="alice")
    await world.settle()
    posted = await say(world, number, "/status api")
    body = reply_to(world, number, posted)
    assert "is invalid; the last valid policy is used" in body
    assert "### api" in body


async def test_hold_twice_updates_the_reason_and_unhold_twice_says_so(world: World) -> None:
    pr = await production_pr(world)
    await say(world, pr["number"], "/hold first reason")
    posted = await say(world, pr["number"], "/hold second reason")
    assert "still on hold, with this reason" in reply_to(world, pr["number"], posted)
    assert world.gate(pr)["output"]["title"].startswith("On hold: second reason")
    posted = await say(world, pr["number"], "/unhold\n/unhold")
    body = reply_to(world, pr["number"], posted)
    assert "hold lifted" in body and f"#{pr['number']} is not on hold" in body


async def test_promote_env_on_a_closed_promotion_pr_is_refused(world: World) -> None:
    pr = await production_pr(world)
    await world.emulator.close_pull(world.repo, pr["number"], user="bob")
    await world.settle()
    # A PR closed without merging proves nothing about its digest, whatever the target.
    posted = await say(world, pr["number"], "/promote staging")
    assert f"#{pr['number']} was closed without merging" in reply_to(world, pr["number"], posted)


async def test_promote_an_untagged_digest_is_refused(world: World) -> None:
    untagged = digest_of("web:untagged")
    await world.emulator.publish_container("acme", "web", untagged, [], source_repo="acme/web",
                                           emit=False)
    number = await issue(world)
    posted = await say(world, number, f"/promote web {untagged} staging")
    assert "carries no tag" in reply_to(world, number, posted)
    assert world.open_pulls() == []


async def test_a_github_error_is_reported(world: World, monkeypatch: Any) -> None:
    async def refused(*args: Any, **kwargs: Any) -> None:
        raise gidgethub.BadRequest(HTTPStatus.UNPROCESSABLE_ENTITY, "Validation Failed")

    monkeypatch.setattr(world.conveyor.ctx.images, "find_by_tags", refused)
    number = await issue(world)
    posted = await say(world, number, "/promote web 1.0.0 staging")
    body = reply_to(world, number, posted)
    assert "⚠️ failed: GitHub answered 422 (Validation Failed)" in body


async def test_an_unreadable_permission_is_reported(world: World, monkeypatch: Any) -> None:
    async def unavailable(*args: Any, **kwargs: Any) -> str:
        raise gidgethub.BadRequest(HTTPStatus.FORBIDDEN, "Resource not accessible")

    monkeypatch.setattr("bot.handlers.commands.permission_of", unavailable)
    number = await issue(world)
    posted = await say(world, number, "/status")
    body = reply_to(world, number, posted)
    assert "could not check your permission" in body and "### web" not in body


async def test_recheck_while_an_evaluation_runs(world: World, monkeypatch: Any) -> None:
    pr = await production_pr(world)

    async def coalesced(*args: Any, **kwargs: Any) -> None:
        return None  # another evaluation of this PR is in flight

    monkeypatch.setattr(world.conveyor.capabilities.gates, "evaluate", coalesced)
    posted = await say(world, pr["number"], "/recheck")
    assert "re-evaluated `conveyor/promotion-gate`: ❌ **failure**" in reply_to(
        world, pr["number"], posted)


async def test_comments_outside_deployment_repositories_are_ignored(world: World) -> None:
    created = await world.emulator.open_issue("acme/web", "A bug", author="alice")
    posted = await world.emulator.comment("acme/web", created["number"], "alice", "/help")
    await world.settle()
    assert world.emulator.reactions("acme/web", posted["id"]) == []
    assert len(world.emulator.comments("acme/web", created["number"])) == 1


async def test_promote_by_tag_finds_the_release_and_its_commit() -> None:
    policy = DEMO_POLICY.replace("    from: any\n", "    from: package\n")
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})
    try:
        digest = digest_of("web:2.0.0")
        await world.emulator.publish_container("acme", "web", digest, ["2.0.0"],
                                               source_repo="acme/web", emit=False)
        await world.emulator.create_tag("acme/web", "v2.0.0")
        await world.emulator.publish_release("acme/web", "v2.0.0", author="alice")
        await world.settle()
        assert world.open_pulls() == []  # staging listens to package events only
        number = await issue(world)
        await say(world, number, "/promote web 2.0.0 staging")
        staging = world.pull("Promote web 2.0.0 to staging")
        marker = parse_marker(staging["body"])
        assert marker is not None
        assert (marker.digest, marker.release_tag) == (digest, "v2.0.0")
        assert marker.source_sha == world.emulator.commit("acme/web", "v2.0.0")["sha"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_rollback_skips_a_commit_where_the_file_was_broken(world: World) -> None:
    first, second = digest_of("web:1.0.0"), digest_of("web:1.1.0")
    for text in (pinned_kustomization("1.0.0", first), "images: [\n",
                 pinned_kustomization("1.1.0", second)):
        world.clock.advance(hours=1)
        await world.emulator.push_files(world.repo, {PROD: text}, author="bob")
    await world.settle()
    number = await issue(world)
    await say(world, number, "/rollback web production")
    pr = world.pull("Roll back web in production to 1.0.0 (from 1.1.0)", state="open")
    assert parse_marker(pr["body"]).digest == first  # type: ignore[union-attr]
