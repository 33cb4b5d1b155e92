"""A promotion marker copied into a pull request Conveyor did not open traces nothing, over HTTP
against the emulator: the source repository gets no deployment and no comment for it."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from bot.domain.promotions.marker import MARKER_RE, TrainMember, parse_marker
from tests.flows.test_trace import (
    SOURCE,
    built_release,
    conveyor_comments,
    merged_source_change,
    use_policy,
)
from tests.harness import World

STAGING = "apps/web/overlays/staging/kustomization.yaml"


async def copied_pr(world: World, body: str, branch: str) -> None:
    """alice opens her own PR with `body` and bob merges it."""
    await world.emulator.push_files(world.repo, {STAGING: f"# {branch}\n"}, branch=branch,
                                    author="alice", message="By hand")
    pr = await world.emulator.open_pull(world.repo, branch, title="Promote web by hand",
                                        body=body, author="alice")
    await world.emulator.merge_pull(world.repo, pr["number"], user="bob")
    await world.settle()


@pytest.mark.parametrize("kind", ["promotion", "train"])
async def test_a_copied_marker_is_not_traced(world: World, kind: str,
                                             caplog: pytest.LogCaptureFixture) -> None:
    await use_policy(world)
    source_pr, sha = await merged_source_change(world)
    await built_release(world, "1.4.2", sha)
    staging = world.pull("Promote web 1.4.2 to staging")
    assert staging["merged"]
    before = world.emulator.deployments(SOURCE)
    comments = conveyor_comments(world, source_pr["number"])
    body = str(staging["body"])
    if kind == "train":  # the same provenance, in the marker of a release train
        marker = parse_marker(body)
        assert marker is not None
        train = replace(marker, kind="train", group="storefront", members=(TrainMember(
            "web", marker.digest, marker.tag, marker.version, STAGING,
            source_sha=marker.source_sha),))
        assert parse_marker(train.render()) == train
        body = MARKER_RE.sub(lambda _: train.render(), body, count=1)
        copied = parse_marker(body)
        assert copied is not None and copied.is_train
    caplog.set_level(logging.WARNING, logger="bot.handlers.trace")
    await copied_pr(world, body, branch=f"hand/{kind}")
    assert world.emulator.deployments(SOURCE) == before
    assert conveyor_comments(world, source_pr["number"]) == comments
    assert "a promotion marker in a PR Conveyor did not open, not traced" in [
        record.getMessage() for record in caplog.records]
