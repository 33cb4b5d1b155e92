"""The gate judges what the environment's Kustomize build runs, whichever file carries it.

Every pull request here is built with the machine's real kustomize at its base and head; the
fixtures are the demo repository's overlays (`kubectl kustomize` builds them) with a patch, a
component or a remote base added where a test needs one.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bot.render.tool import find_kustomize
from bot.sandbox.demo import DEMO_FILES
from bot.text import unescape_markdown
from tests.flows.test_gate_integrity import evidence_only
from tests.harness import World, close_world, hand_pr, make_world

# CI never skips: a machine without kustomize fails these instead.
pytestmark = pytest.mark.skipif(find_kustomize(None) is None and not os.environ.get("CI"),
                                reason="needs kustomize or kubectl")

PROD = "apps/web/overlays/prod/kustomization.yaml"
PROD_PATCH = "apps/web/overlays/prod/replicas.yaml"
BASE = "apps/web/base/deployment.yaml"
COMPONENT = "components/debug/kustomization.yaml"

PATCHED_PROD = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
components:
  - ../../../../components/debug
patches:
  - path: replicas.yaml
images:
  - name: ghcr.io/acme/web
    newTag: "0.9.0"  # promoted by Conveyor
"""
REPLICAS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
"""
DEBUG_COMPONENT = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
commonLabels:
  debug: "off"
"""


def frontend_in_production() -> dict[str, str]:
    """The demo where a production-only patch makes the web container run
    `ghcr.io/acme/web-frontend`: the overlay's `images:` entry for `ghcr.io/acme/web` matches
    no container there, while staging still runs `ghcr.io/acme/web`."""
    prod = PATCHED_PROD.replace("  - path: replicas.yaml\n",
                                "  - path: replicas.yaml\n  - path: frontend.yaml\n")
    frontend = REPLICAS.replace("  replicas: 3\n", "  template:\n    spec:\n      containers:\n"
                                "        - name: web\n"
                                "          image: ghcr.io/acme/web-frontend:0.9.0\n")
    return {**DEMO_FILES, PROD: prod, PROD_PATCH: REPLICAS, COMPONENT: DEBUG_COMPONENT,
            "apps/web/overlays/prod/frontend.yaml": frontend}


def summary(run: dict[str, Any]) -> str:
    return f"{run['output']['title']}\n{unescape_markdown(run['output']['summary'])}"


def concluded(world: World, pr: dict[str, Any], conclusion: str, *needles: str) -> str:
    run = world.gate(pr)
    text = summary(run)
    assert run["conclusion"] == conclusion, text
    for needle in needles:
        assert needle in text, text
    return text


@pytest.fixture
async def patched() -> AsyncIterator[World]:
    """The demo with production built from a patch and a component besides its overlay."""
    built = await make_world(files={**DEMO_FILES, PROD: PATCHED_PROD, PROD_PATCH: REPLICAS,
                                    COMPONENT: DEBUG_COMPONENT})
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == []


async def test_an_image_set_in_a_listed_patch_fails_the_gate(patched: World) -> None:
    world = patched
    attack = REPLICAS + ("  template:\n    spec:\n      containers:\n"
                         "        - name: web\n          image: docker.io/evil/miner:1.0\n")
    pr = await hand_pr(world, PROD_PATCH, attack)
    concluded(world, pr, "failure", "docker.io/evil/miner is not under allowed_images",
              "Deployment web, container web")


async def test_a_sidecar_added_to_a_shared_base_is_judged_for_production(
        patched: World) -> None:
    world = patched
    base = world.emulator.file(world.repo, BASE)
    assert base is not None
    sidecar = base + "        - name: proxy\n          image: ghcr.io/acme/proxy:2.0\n"
    pr = await hand_pr(world, BASE, sidecar)
    text = concluded(world, pr, "failure", "container proxy",
                     "ghcr.io/acme/proxy in web → production")
    assert "no gated environment changed" not in text.lower()


async def test_an_image_added_by_a_component_is_judged(patched: World) -> None:
    world = patched
    component = DEBUG_COMPONENT + (
        "patches:\n  - target: {kind: Deployment}\n    patch: |-\n"
        "      - op: add\n        path: /spec/template/spec/initContainers\n"
        "        value: [{name: debug, image: 'ghcr.io/acme/debug:1.0'}]\n")
    pr = await hand_pr(world, COMPONENT, component)
    concluded(world, pr, "failure", "init container debug", "ghcr.io/acme/debug")


async def test_a_harmless_patch_passes_without_evidence_or_approval(patched: World) -> None:
    world = patched
    pr = await hand_pr(world, PROD_PATCH, REPLICAS.replace("replicas: 3", "replicas: 5"))
    text = concluded(world, pr, "success", "builds with every workload's image unchanged")
    assert "no approvals required" in text


async def test_a_base_rename_that_escapes_the_overlays_images_entry_fails(
        patched: World) -> None:
    """The overlay's `images:` entry no longer matches: production would run an unpinned,
    untagged image."""
    world = patched
    base = world.emulator.file(world.repo, BASE)
    assert base is not None
    pr = await hand_pr(world, BASE, base.replace("image: ghcr.io/acme/web",
                                                 "image: ghcr.io/acme/web-frontend"))
    concluded(world, pr, "failure", "ghcr.io/acme/web-frontend", "neither a tag nor a digest")


async def test_a_build_that_fails_fails_the_gate_with_kustomizes_message(
        patched: World) -> None:
    world = patched
    pr = await hand_pr(world, "apps/web/base/kustomization.yaml",
                       "resources:\n  - deployment.yaml\n  - service.yaml\n")
    concluded(world, pr, "failure", "production build", "service.yaml")


async def test_a_remote_base_is_reported_not_fetched(patched: World) -> None:
    world = patched
    remote = PATCHED_PROD.replace(
        "  - ../../base\n", "  - ../../base\n  - https://github.com/acme/common//base?ref=v1\n")
    pr = await hand_pr(world, PROD, remote)
    concluded(world, pr, "failure", "remote resource", "does not fetch")


async def test_a_change_outside_every_build_is_no_gated_change(patched: World) -> None:
    world = patched
    pr = await hand_pr(world, "README.md", "# acme/deploy\n\nNotes.\n")
    run = world.gate(pr)
    assert run["conclusion"] == "success"
    assert run["output"]["title"] == "No gated environment changed"


# -- promotions ------------------------------------------------------------------------------
async def test_a_promotion_lists_the_workloads_whose_image_it_changes(world: World) -> None:
    digest = await world.release("web", "1.0.0")
    pr = world.pull("Promote web 1.0.0 to staging")
    body = unescape_markdown(pr["body"])
    assert "Building apps/web/overlays/staging with this change" in body, body
    assert (f"| Deployment web, container web | ghcr.io/acme/web:0.9.0 | "
            f"ghcr.io/acme/web:1.0.0@{digest} |") in body, body


async def test_a_release_whose_overlay_entry_matches_no_container_opens_nothing() -> None:
    """The base runs `ghcr.io/acme/web-frontend`; the overlays' `images:` entry says
    `ghcr.io/acme/web`: a promotion would change nothing in any cluster."""
    base = DEMO_FILES[BASE].replace("image: ghcr.io/acme/web", "image: ghcr.io/acme/web-frontend")
    world = await make_world(files={**DEMO_FILES, BASE: base})
    try:
        await world.release("web", "1.10.0")
        assert [pr["title"] for pr in world.emulator.pulls(world.repo)] == []
        sha = world.emulator.commit("acme/web", "v1.10.0")["sha"]
        runs = world.emulator.check_runs("acme/web", sha, "conveyor/promotion (staging)")
        assert [run["conclusion"] for run in runs] == ["failure"]
        assert "no workload's image changes" in runs[0]["output"]["summary"]
        assert "apps/web/overlays/staging" in runs[0]["output"]["summary"]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_command_promotion_that_changes_no_workload_is_refused_in_its_reply() -> None:
    world = await make_world(files=frontend_in_production())
    try:
        await world.release("web", "1.0.0")
        assert world.pull("Promote web 1.0.0 to staging")["merged"]
        created = await world.emulator.open_issue(world.repo, "Deploy", author="alice")
        await world.settle()
        posted = await world.emulator.comment(world.repo, int(created["number"]), "alice",
                                              "/promote web v1.0.0 production")
        await world.settle()
        replies = [c["body"] for c in world.emulator.comments(world.repo, created["number"])
                   if f"<!-- conveyor:reply {posted['id']} -->" in c["body"]]
        assert len(replies) == 1
        assert "no workload's image changes" in unescape_markdown(replies[0]), replies[0]
        assert [pr["title"] for pr in world.open_pulls()] == []
    finally:
        await close_world(world)
    assert world.emulator.violations == []


# -- the config check ------------------------------------------------------------------------
def config_check(world: World, pr: dict[str, Any]) -> dict[str, Any]:
    runs = world.emulator.check_runs(world.repo, pr["head"]["sha"], "conveyor/config-check")
    assert len(runs) == 1, runs
    return runs[0]


async def test_a_listed_patch_is_checked_as_a_patch_not_as_a_whole_resource(
        patched: World) -> None:
    world = patched
    pr = await hand_pr(world, PROD_PATCH, REPLICAS.replace("replicas: 3", "replicas: 4"))
    run = config_check(world, pr)
    assert run["conclusion"] == "success", run["output"]
    assert run["output"]["annotations"] == []


async def test_a_build_failure_is_annotated_on_each_overlay_it_reaches(patched: World) -> None:
    world = patched
    pr = await hand_pr(world, "apps/web/base/kustomization.yaml",
                       "resources:\n  - deployment.yaml\n  - service.yaml\n")
    run = config_check(world, pr)
    assert run["conclusion"] == "failure"
    messages = {a["path"]: a["message"] for a in run["output"]["annotations"]}
    for env, overlay in (("staging", "staging"), ("production", "prod")):
        message = messages[f"apps/web/overlays/{overlay}/kustomization.yaml"]
        assert message.startswith(f"the {env} build of apps/web/overlays/{overlay} fails: "), \
            message
        assert "service.yaml" in message


# -- without kustomize -----------------------------------------------------------------------
async def test_without_kustomize_files_are_judged_as_files_and_the_gate_says_so() -> None:
    world = await make_world(files={**DEMO_FILES, PROD: PATCHED_PROD, PROD_PATCH: REPLICAS,
                                    COMPONENT: DEBUG_COMPONENT}, kustomize=None)
    try:
        attack = REPLICAS + ("  template:\n    spec:\n      containers:\n"
                             "        - name: web\n          image: docker.io/evil/miner:1.0\n")
        pr = await hand_pr(world, PROD_PATCH, attack)
        run = world.gate(pr)
        assert "`apps/web/overlays/prod` is not built: rendering is off (no kustomize)" in \
            unescape_markdown(run["output"]["summary"]), run["output"]
        async with aiohttp.ClientSession() as session, session.get(
                f"{world.bot.base_url}/healthz") as resp:
            health = await resp.json()
        assert health["rendering"] == ("off (no kustomize: Kustomize environments are judged "
                                       "file by file)")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


# -- release trains --------------------------------------------------------------------------
async def train_reply(world: World) -> str:
    for service in ("web", "api"):
        await world.release(service, "1.0.0")
        assert world.pull(f"Promote {service} 1.0.0 to staging")["merged"]
    created = await world.emulator.open_issue(world.repo, "Release", author="alice")
    await world.settle()
    posted = await world.emulator.comment(world.repo, int(created["number"]), "alice",
                                          "/promote production storefront")
    await world.settle()
    [reply] = [c["body"] for c in world.emulator.comments(world.repo, created["number"])
               if f"<!-- conveyor:reply {posted['id']} -->" in c["body"]]
    return unescape_markdown(reply)


async def test_a_train_lists_the_workloads_of_each_overlay_it_builds() -> None:
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml":
                                    evidence_only()})
    try:
        await train_reply(world)
        [train] = [pr for pr in world.open_pulls() if pr["title"].startswith("Promote storefront")]
        body = unescape_markdown(train["body"])
        digest = world.published["web:1.0.0"]
        assert "Building apps/web/overlays/prod with this change" in body, body
        assert (f"| Deployment web, container web | ghcr.io/acme/web:0.9.0 | "
                f"ghcr.io/acme/web:1.0.0@{digest} |") in body
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_train_with_a_service_whose_move_changes_no_workload_is_refused() -> None:
    world = await make_world(files={**frontend_in_production(),
                                    ".github/conveyor.yml": evidence_only()})
    try:
        reply = await train_reply(world)
        assert "web: the build of `apps/web/overlays/prod` runs the same images" in reply, reply
        assert not [pr for pr in world.open_pulls() if pr["title"].startswith("Promote store")]
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_tree_github_lists_in_part_fails_a_kustomize_gate_closed(patched: World) -> None:
    """GitHub cuts a recursive tree at 100,000 entries: which files a build reads is then
    unknown, and a Kustomize environment is not passed on a guess."""
    world = patched
    world.emulator.world.tree_entry_limit = 5
    pr = await hand_pr(world, PROD_PATCH, REPLICAS.replace("replicas: 3", "replicas: 6"))
    concluded(world, pr, "failure", "production build",
              "GitHub lists only part of the tree")
