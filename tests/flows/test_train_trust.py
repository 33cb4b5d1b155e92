"""Release trains take trust from Conveyor's own commit, never from the PR body.

Any writer can edit a train's body, and its marker with it. The requester who may not approve,
the digests a train moved and the source commits reported back are read from the trailers of
the commit Conveyor made on the train.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bot.domain.promotions.marker import parse_marker
from tests.flows.test_trains import TOGETHER_POLICY, files, image, release_together
from tests.harness import close_world, make_world

# Staging trains wait for a person to merge them; production opens by itself after staging,
# and needs one approval by alice or bob, never by whoever asked for the release.
POLICY = TOGETHER_POLICY.replace("    auto_merge: true\n", "").replace(
    "    evidence: [merged, deployed]\n    deployed_context: argocd/staging\n",
    "    evidence: [merged]\n    promote: auto\n    approvals: 1\n"
    "    approvers: [alice, bob]\n")
VERSIONS = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}


def rewrite_marker(body: str, change: dict[str, Any]) -> str:
    """The body with its marker's JSON changed as a writer would edit it."""
    match = re.search(r"<!-- conveyor:(\{.*?\}) -->", body, re.S)
    assert match is not None
    data = json.loads(match.group(1))
    data.update(change)
    edited = json.dumps(data).replace("--", "-\\u002d")
    return body[:match.start()] + f"<!-- conveyor:{edited} -->" + body[match.end():]


async def test_a_requester_renamed_in_the_body_does_not_reach_the_downstream_train() -> None:
    world = await make_world(files={**files(VERSIONS, VERSIONS), ".github/conveyor.yml": POLICY})
    try:
        staging = await release_together(world)
        await world.emulator.edit_pull(world.repo, staging["number"], user="alice",
                                       body=rewrite_marker(staging["body"],
                                                           {"requester": "mallory"}))
        await world.settle()
        await world.emulator.merge_pull(world.repo, staging["number"], user="bob")
        await world.settle()

        production = world.pull("Promote storefront to production (3 services)", state="open")
        head = world.emulator.commit(world.repo, production["head"]["sha"])
        assert "Conveyor-Requested-By: alice" in head["commit"]["message"]
        shown = parse_marker(production["body"])
        assert shown is not None and shown.requester == "alice"

        await world.emulator.review(world.repo, production["number"], "alice", "APPROVE")
        await world.settle()
        run = world.gate(production)
        assert run["conclusion"] == "action_required", run["output"]
        assert "@alice (requested the promotion)" in run["output"]["summary"]
        await world.emulator.review(world.repo, production["number"], "bob", "APPROVE")
        await world.settle()
        assert world.gate(production)["conclusion"] == "success"
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_a_train_body_that_lists_other_digests_and_commits_is_not_believed() -> None:
    world = await make_world(files={**files(VERSIONS, VERSIONS), ".github/conveyor.yml": POLICY})
    try:
        staging = await release_together(world)
        tagged = world.emulator.commit("acme/api", "v2.0.0")["sha"]
        other = await world.emulator.push_files("acme/api", {"README.md": "# later\n"},
                                                message="a commit never released")
        marker = parse_marker(staging["body"])
        assert marker is not None
        members = [{"service": m.service, "digest": image(m.service, "9.9.9")[2],
                    "version": "9.9.9", "path": m.path, "source_sha": other}
                   for m in marker.members]
        await world.emulator.edit_pull(world.repo, staging["number"], user="alice",
                                       body=rewrite_marker(staging["body"],
                                                           {"members": members}))
        await world.settle()
        await world.emulator.merge_pull(world.repo, staging["number"], user="bob")
        await world.settle()

        # What is reported to the source repository is what the train's commit moved.
        reported = {d["sha"] for d in world.emulator.deployments("acme/api")
                    if d["environment"] == "staging"}
        assert reported == {tagged}
        production = world.pull("Promote storefront to production (3 services)", state="open")
        shown = parse_marker(production["body"])
        assert shown is not None
        assert [(m.service, m.digest, m.source_sha) for m in shown.members] == [
            (name, image(name, "2.0.0")[2], tagged) for name in ("web", "api", "cart")]
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_the_resync_merges_no_train_whose_body_claims_a_pushed_head() -> None:
    """An ungated train is merged by the resync only at the commit Conveyor made."""
    from bot.promotion.resync.reconcile import resync_all

    world = await make_world(files={**files(VERSIONS, VERSIONS),
                                    ".github/conveyor.yml": TOGETHER_POLICY})
    try:
        world.emulator.set_required_checks(world.repo, ["ci"])  # the auto-merge is refused
        staging = await release_together(world)
        pushed = await world.emulator.push_files(
            world.repo, {"apps/web/staging.yaml": "# replaced by a writer\n"},
            branch=staging["head"]["ref"], author="alice", message="a change of mine")
        await world.emulator.edit_pull(world.repo, staging["number"], user="alice",
                                       body=rewrite_marker(staging["body"], {"commit": pushed}))
        world.emulator.set_required_checks(world.repo, [])
        await world.settle()
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        assert world.pull("Promote storefront to staging", state="open")["head"]["sha"] == pushed
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_the_resync_opens_the_next_promotion_with_the_commits_requester() -> None:
    """A single-service promotion whose merge event was lost: the resync reads the merged PR's
    commit, not its edited body, for who asked for it."""
    from bot.promotion.resync.reconcile import resync_all
    from tests.flows.test_trains import POLICY as SINGLES

    policy = SINGLES.replace("    auto_merge: true\n", "").replace(
        "    evidence: [merged, deployed]\n    deployed_context: argocd/staging\n",
        "    evidence: [merged]\n    promote: auto\n    approvals: 1\n"
        "    approvers: [alice, bob]\n")
    world = await make_world(files={**files(VERSIONS, VERSIONS), ".github/conveyor.yml": policy})
    try:
        await world.emulator.create_tag("acme/web", "v2.0.0")
        await world.emulator.publish_container("acme", "web", image("web", "2.0.0")[2],
                                               ["2.0.0"], source_repo="acme/web")
        await world.emulator.publish_release("acme/web", "v2.0.0", author="alice")
        await world.settle()
        staging = world.pull("Promote web 2.0.0 to staging", state="open")
        await world.emulator.edit_pull(world.repo, staging["number"], user="alice",
                                       body=rewrite_marker(staging["body"],
                                                           {"requester": "mallory"}))
        await world.settle()
        webhook, world.emulator.webhook_url = world.emulator.webhook_url, None
        await world.emulator.merge_pull(world.repo, staging["number"], user="bob")
        world.emulator.webhook_url = webhook  # the merge event never reached Conveyor
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        production = world.pull("Promote web 2.0.0 to production", state="open")
        head = world.emulator.commit(world.repo, production["head"]["sha"])
        assert "Conveyor-Requested-By: alice" in head["commit"]["message"]
        assert world.emulator.violations == []
    finally:
        await close_world(world)
