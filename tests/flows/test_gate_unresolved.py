"""The production gate on image references it cannot resolve to a digest, over HTTP against
the emulator: no tag and no digest, or a tag the registry does not have, fail the gate and
say which."""

from __future__ import annotations

import pytest

from tests.flows.test_gate import PROD, staged
from tests.harness import World, hand_pr, pinned_kustomization

UNPINNED = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
images:
  - name: ghcr.io/acme/web
{pin}"""


@pytest.mark.parametrize(("pin", "reason"), [
    ("    newName: ghcr.io/acme/web\n", "neither a tag nor a digest"),
    ('    newTag: "9.9.9"\n', "tag 9.9.9 resolves to no digest"),
])
async def test_a_reference_without_a_digest_fails_the_gate(world: World, pin: str,
                                                           reason: str) -> None:
    await staged(world)
    pr = await hand_pr(world, PROD, UNPINNED.format(pin=pin))
    run = world.gate(pr)
    assert run["conclusion"] == "failure"
    assert reason in run["output"]["summary"], run["output"]["summary"]


async def test_a_fix_of_a_file_that_did_not_parse_judges_every_reference(world: World) -> None:
    digest = await staged(world)
    await world.emulator.push_files(world.repo, {PROD: "images: [\n"}, author="bob",
                                    message="A broken overlay")
    await world.settle()
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest), title="Fix prod")
    run = world.gate(pr)
    # the base does not parse: the pinned reference counts as a change and is judged
    assert run["conclusion"] == "failure"
    assert "deployed" in run["output"]["summary"], run["output"]["summary"]
    assert run["output"]["title"] != "No gated environment changed"
