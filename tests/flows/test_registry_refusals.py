"""A registry that says no: the release says why on its commit, and the package event (or
the resync) completes the promotion once the registry answers."""

from __future__ import annotations

from bot.sandbox.demo import digest_of
from tests.harness import World


async def test_a_refused_lookup_is_reported_then_completed_by_the_package_event(
        world: World) -> None:
    em = world.emulator
    digest = digest_of("web:1.2.0")
    await em.publish_container("acme", "web", digest, ["1.2.0"], source_repo="acme/web",
                               emit=False)
    em.registry.fail_with = 401
    await em.create_tag("acme/web", "v1.2.0")
    await em.publish_release("acme/web", "v1.2.0", author="alice")
    await world.settle()
    assert world.open_pulls() == []
    sha = em.commit("acme/web", "v1.2.0")["sha"]
    runs = em.check_runs("acme/web", sha, "conveyor/promotion (staging)")
    assert len(runs) == 1 and runs[0]["conclusion"] == "failure"
    assert ("registry ghcr.io answered 401 for acme/web: set CONVEYOR_REGISTRY_AUTH_FILE"
            in runs[0]["output"]["summary"])

    em.registry.fail_with = None  # the pull secret is fixed; GHCR announces the push
    await em.publish_container("acme", "web", digest, ["1.2.0"], source_repo="acme/web",
                               revision=sha)
    await world.settle()
    pr = world.pull("Promote web 1.2.0 to staging")
    assert digest[7:19] in pr["head"]["ref"]
    # The release's commit is no longer left red: the refusal completes, saying what happened.
    runs = em.check_runs("acme/web", sha, "conveyor/promotion (staging)")
    assert [run["conclusion"] for run in runs] == ["success"]
    assert runs[0]["output"]["title"] == "web 1.2.0 was promoted to staging"
    summary = runs[0]["output"]["summary"]
    assert f"is opened: {pr['html_url']}" in summary
    assert "registry ghcr.io answered 401" in summary
    assert world.emulator.violations == []


async def test_a_refused_command_replies_with_the_fix(world: World) -> None:
    em = world.emulator
    em.registry.fail_with = 403
    issue = await em.open_issue(world.repo, "Promote", author="alice")
    posted = await em.comment(world.repo, issue["number"], "alice",
                              "/promote web 1.0.0 staging")
    await world.settle()
    replies = [c["body"] for c in em.comments(world.repo, issue["number"])
               if f"conveyor:reply {posted['id']}" in c["body"]]
    assert len(replies) == 1
    # Markdown-escaped in the comment; it renders as the plain line
    assert ("registry ghcr.io answered 403 for acme/web: set CONVEYOR\\_REGISTRY\\_AUTH\\_FILE"
            in replies[0])
    assert world.open_pulls() == []
