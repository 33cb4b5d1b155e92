"""The gate against a writer who wants around it: each test is one way that used to pass.

Every attempt is a hand-written pull request (or a merged one upstream) over the real bot and
the stateful emulator; each must end with a failing `conveyor/promotion-gate` that says why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from bot.domain.promotions.marker import parse_marker
from bot.names import GATE_CHECK as GATE
from bot.promotion.opening.opener import RepoOpener
from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY, digest_of
from bot.text import unescape_markdown
from tests.harness import World, close_world, hand_pr, make_world, pinned_kustomization

PROD = "apps/web/overlays/prod/kustomization.yaml"
STAGING = "apps/web/overlays/staging/kustomization.yaml"
API_PROD = "charts/api/values-production.yaml"
HEADER = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
          "  - ../../base\nimages:\n")


async def staged(world: World, version: str = "1.0.0", service: str = "web") -> str:
    digest = await world.release(service, version)
    assert world.pull(f"Promote {service} {version} to staging")["merged"]
    return digest


def summary(run: dict[str, Any]) -> str:
    """Title and summary, without the summary's Markdown escapes."""
    return f"{run['output']['title']}\n{unescape_markdown(run['output']['summary'])}"


def failing(world: World, pr: dict[str, Any], *needles: str) -> str:
    run = world.gate(pr)
    text = summary(run)
    assert run["status"] == "completed" and run["conclusion"] == "failure", text
    for needle in needles:
        assert needle in text, text
    return text


async def world_with(policy: str) -> World:
    return await make_world(files={**DEMO_FILES, ".github/conveyor.yml": policy})


def evidence_only(extra: str = "") -> str:
    """The demo policy with production needing only `merged` evidence: no report, no soak,
    no approval, so that evidence is all the gate judges."""
    kept = [line for line in DEMO_POLICY.splitlines(keepends=True)
            if not line.lstrip().startswith(("approvers:", "deployed_context:", "deployed_by:"))]
    policy = "".join(kept).replace("evidence: [merged, deployed]", "evidence: [merged]")
    policy = policy.replace("soak: 30m", "soak: 0s").replace("approvals: 1", "approvals: 0")
    return policy.replace("    after: staging\n", "    after: staging\n" + extra)


@pytest.fixture
async def merged_only() -> AsyncIterator[World]:
    built = await world_with(evidence_only())
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == []


# -- 1. every image in a gated file, not only the service's own -----------------------------
async def test_a_second_image_beside_the_services_own_is_judged(merged_only: World) -> None:
    world = merged_only
    digest = await staged(world)
    sidecar = pinned_kustomization("1.0.0", digest) + (
        "  - name: docker.io/library/nginx\n    newTag: latest\n")
    pr = await hand_pr(world, PROD, sidecar)
    failing(world, pr, "docker.io/library/nginx is not under allowed_images",
            "tag latest is not looked up outside allowed_images")


async def test_a_helm_repository_swapped_outside_allowed_images_fails(world: World) -> None:
    values = world.emulator.file(world.repo, API_PROD)
    assert values is not None
    swapped = values.replace("repository: ghcr.io/acme/api", "repository: docker.io/evil/api")
    pr = await hand_pr(world, API_PROD, swapped.replace('tag: "0.9.0"', "tag: latest"))
    failing(world, pr, "docker.io/evil/api is not under allowed_images")


# -- 2. names are part of what changes -------------------------------------------------------
async def test_a_kustomize_new_name_that_keeps_the_digest_needs_its_own_evidence(
        merged_only: World) -> None:
    world = merged_only
    digest = await staged(world)
    control = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest),
                            branch="hand/control", title="Control")
    assert world.gate(control)["conclusion"] == "success", summary(world.gate(control))

    swapped = (HEADER + "  - name: ghcr.io/acme/web\n    newName: ghcr.io/acme/web-debug\n"
               f'    newTag: "1.0.0"\n    digest: {digest}\n')
    pr = await hand_pr(world, PROD, swapped)
    failing(world, pr, "ghcr.io/acme/web-debug in web → production",
            "no merged evidence from staging")


async def test_a_lookalike_name_is_another_image(merged_only: World) -> None:
    world = merged_only
    digest = await staged(world)
    lookalike = (HEADER + "  - name: ghcr.io/acme/web\n    newName: ghcr.io/acme/w\u0435b\n"
                 f'    newTag: "1.0.0"\n    digest: {digest}\n')
    pr = await hand_pr(world, PROD, lookalike)
    failing(world, pr, "non-ASCII", "U+0435")


# -- 3. the environment's tags rule reads the registry, not the file ------------------------
async def test_production_tags_apply_to_the_registrys_versions_of_the_digest() -> None:
    world = await world_with(evidence_only('    tags: "semver:~1.4"\n'))
    try:
        old = await staged(world, "1.4.1")
        new = await staged(world, "1.5.0")
        admitted = await hand_pr(world, PROD, pinned_kustomization("1.4.1", old),
                                 branch="hand/admitted", title="Admitted")
        run = world.gate(admitted)
        assert run["conclusion"] == "success", summary(run)
        assert "version 1.4.1 is admitted in production" in summary(run)

        disguised = await hand_pr(world, PROD, pinned_kustomization("1.4.1", new))
        failing(world, disguised, "carries 1.5.0 in the registry",
                "no version admitted in production by semver:~1.4")

        bare = (HEADER + f"  - name: ghcr.io/acme/web\n    digest: {new}\n")
        untagged = await hand_pr(world, PROD, bare, branch="hand/bare", title="Bare digest")
        failing(world, untagged, "carries 1.5.0 in the registry")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


# -- 4. a gated file the gate cannot read fails it ----------------------------------------------
async def test_a_deleted_gated_file_fails(world: World) -> None:
    await world.emulator.push_files(world.repo, {PROD: None}, branch="hand/delete",
                                    message="Drop prod overlay")
    await world.emulator.open_pull(world.repo, "hand/delete", title="Drop prod", author="alice")
    await world.settle()
    failing(world, world.pull("Drop prod", state="open"), "deleted")


async def test_a_renamed_gated_file_fails(world: World) -> None:
    text = world.emulator.file(world.repo, PROD)
    await world.emulator.push_files(world.repo, {PROD: None, "apps/web/overlays/p.yaml": text},
                                    branch="hand/rename", message="Move prod overlay")
    await world.emulator.open_pull(world.repo, "hand/rename", title="Move prod", author="alice")
    await world.settle()
    failing(world, world.pull("Move prod", state="open"), "renamed to apps/web/overlays/p.yaml")


@pytest.mark.parametrize(("content", "reason"), [
    pytest.param("utf-16", "UTF-16 byte order mark", id="utf-16-bom"),
    pytest.param("latin-1", "not valid UTF-8 (byte 0xe9", id="latin-1-byte"),
    pytest.param("huge", "larger than the 1 MB", id="over-1-mb"),
])
async def test_a_gated_file_that_cannot_be_read_fails(world: World, content: str,
                                                      reason: str) -> None:
    text = pinned_kustomization("1.0.0", digest_of("never staged"))
    data = {
        "utf-16": text.encode("utf-16"),
        "latin-1": ("# caf\u00e9\n" + text).encode("latin-1"),
        "huge": (text + "# " + "x" * (1024 * 1024) + "\n").encode(),
    }[content]
    await world.emulator.push_files(world.repo, {PROD: data}, branch="hand/bytes")
    await world.emulator.open_pull(world.repo, "hand/bytes", title="Odd bytes", author="alice")
    await world.settle()
    failing(world, world.pull("Odd bytes", state="open"), reason)


async def test_a_gated_file_past_the_3000_files_github_lists_fails(world: World) -> None:
    # GitHub lists 3,000 files of a pull request at most; "apps/…" sorts after "a-filler/…",
    # so the gated file is the 3,001st.
    files: dict[str, str | bytes | None] = {f"a-filler/{n:04}.txt": f"{n}\n" for n in range(3000)}
    files[PROD] = pinned_kustomization("1.0.0", digest_of("never staged"))
    await world.emulator.push_files(world.repo, files, branch="hand/big")
    await world.emulator.open_pull(world.repo, "hand/big", title="Big change", author="alice")
    await world.settle()
    failing(world, world.pull("Big change", state="open"), "changes 3001 files",
            "GitHub lists only the first 3000")


# -- 5. YAML read as Helm and Kustomize read it ------------------------------------------------
async def test_a_second_digest_key_fails(merged_only: World) -> None:
    world = merged_only
    digest = await staged(world)
    doubled = pinned_kustomization("1.0.0", digest) + f"    digest: {digest_of('other')}\n"
    pr = await hand_pr(world, PROD, doubled)
    failing(world, pr, "duplicate key 'digest'")


async def test_an_image_block_filled_by_a_merge_key_is_judged(world: World) -> None:
    values = ("replicaCount: 4\nevil: &evil\n  repository: docker.io/evil/api\n"
              "  tag: latest\nimage:\n  <<: *evil\n  pullPolicy: IfNotPresent\n")
    pr = await hand_pr(world, API_PROD, values)
    failing(world, pr, "docker.io/evil/api is not under allowed_images")


# -- 6. merged evidence is the upstream file's history, by full digest -------------------------
async def test_a_merged_pr_on_a_conveyor_named_branch_is_no_evidence(merged_only: World) -> None:
    world = merged_only
    digest = digest_of("web:6.6.6")
    await world.emulator.publish_container("acme", "web", digest, ["6.6.6"],
                                           source_repo="acme/web", emit=False)
    branch = f"conveyor/staging/web-{digest[7:19]}"
    await world.emulator.push_files(world.repo, {"README.md": "# harmless\n"}, branch=branch)
    await world.emulator.open_pull(world.repo, branch, title="Looks like Conveyor",
                                   author="alice")
    await world.settle()
    decoy = world.pull("Looks like Conveyor", state="open")
    await world.emulator.merge_pull(world.repo, decoy["number"], user="alice")
    await world.settle()

    pr = await hand_pr(world, PROD, pinned_kustomization("6.6.6", digest))
    failing(world, pr, "no merged evidence from staging")


async def test_a_digest_sharing_the_first_12_hex_digits_is_no_evidence(
        merged_only: World) -> None:
    world = merged_only
    digest = await staged(world)
    twin = digest[:19] + ("0" if digest[19] != "0" else "1") + digest[20:]
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", twin))
    failing(world, pr, "no merged evidence from staging")


# -- 8. each evaluation reads the PR as it is now ------------------------------------------------
async def held_pr(world: World) -> dict[str, Any]:
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    assert world.gate(pr)["conclusion"] == "success", summary(world.gate(pr))
    await world.emulator.comment(world.repo, pr["number"], "bob", "/hold until the incident ends")
    await world.settle()
    failing(world, pr, "on hold")
    return pr


async def test_a_late_review_delivery_cannot_lift_a_hold(merged_only: World) -> None:
    world = merged_only
    digest = await staged(world)
    pr = await hand_pr(world, PROD, pinned_kustomization("1.0.0", digest))
    await world.emulator.review(world.repo, pr["number"], "dave", "APPROVE")
    await world.settle()
    review = next(d for d in reversed(world.emulator.deliveries)
                  if d.event == "pull_request_review")
    await world.emulator.comment(world.repo, pr["number"], "bob", "/hold until the incident ends")
    await world.settle()
    failing(world, pr, "on hold")

    # The same review arrives again, late, with the PR as it was before the hold.
    await world.emulator.send_event("pull_request_review", review.payload)
    await world.settle()
    failing(world, pr, "on hold")


async def test_a_triage_user_cannot_remove_the_hold(merged_only: World) -> None:
    world = merged_only
    pr = await held_pr(world)
    world.emulator.set_permission(world.repo, "carol", "triage")
    await world.emulator.remove_label(world.repo, pr["number"], "conveyor/hold", user="carol")
    await world.settle()
    current = world.pull("Bump production by hand", state="open")
    assert "conveyor/hold" in [label["name"] for label in current["labels"]]
    failing(world, current, "on hold")
    assert any("without write permission" in c["body"]
               for c in world.emulator.comments(world.repo, pr["number"]))

    # A writer may still take the label off by hand.
    await world.emulator.remove_label(world.repo, pr["number"], "conveyor/hold", user="dave")
    await world.settle()
    assert world.gate(current)["conclusion"] == "success"


# -- 7. trust rests on what only Conveyor writes ------------------------------------------------
def approved_by_sre(extra: str = "") -> str:
    """Production needs `merged` evidence and one approval by @acme/sre."""
    return evidence_only(extra).replace(
        "    approvals: 0\n", '    approvals: 1\n    approvers: ["@acme/sre"]\n')


async def promoted_to_production(world: World, requester: str) -> dict[str, Any]:
    await staged(world)
    staging = world.pull("Promote web 1.0.0 to staging")
    await world.emulator.comment(world.repo, staging["number"], requester,
                                 "/promote production")
    await world.settle()
    return world.pull("Promote web 1.0.0 to production", state="open")


def forge(body: str, **fields: str) -> str:
    marker = parse_marker(body)
    assert marker is not None
    return body.replace(marker.render(), replace(marker, **fields).render())


async def test_an_edited_requester_does_not_enable_self_approval() -> None:
    world = await world_with(approved_by_sre())
    try:
        pr = await promoted_to_production(world, "dave")
        await world.emulator.edit_pull(world.repo, pr["number"], user="dave",
                                       body=forge(pr["body"], requester="alice"))
        await world.emulator.review(world.repo, pr["number"], "dave", "APPROVE")
        await world.settle()
        run = world.gate(pr)
        assert run["conclusion"] == "action_required", summary(run)
        assert "@dave (requested the promotion)" in summary(run)
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_an_edited_commit_does_not_bring_back_auto_merge_after_a_push() -> None:
    world = await world_with(approved_by_sre("    auto_merge: true\n"))
    try:
        pr = await promoted_to_production(world, "dave")
        head = await world.emulator.push_files(world.repo, {"apps/web/notes.txt": "x\n"},
                                               branch=pr["head"]["ref"], author="bob")
        await world.emulator.edit_pull(world.repo, pr["number"], user="bob",
                                       body=forge(pr["body"], commit=head))
        await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
        await world.settle()
        current = world.pull("Promote web 1.0.0 to production")
        assert world.gate(current)["conclusion"] == "success", summary(world.gate(current))
        assert not current["merged"] and current["state"] == "open"
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_push_to_a_new_promotion_branch_before_conveyors_commit_is_left_out(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The branch exists a moment before Conveyor's commit (the body's links are read
    meanwhile): a writer who pushes then must not ride under it into the merged PR."""
    creating = RepoOpener._create_branch
    evil = pinned_kustomization("6.6.6", "sha256:" + "e" * 64)
    pushed: list[str] = []

    async def then_a_push(opener: RepoOpener[Any], branch: str, sha: str) -> None:
        await creating(opener, branch, sha)
        if not pushed:
            pushed.append(await world.emulator.push_files(
                world.repo, {PROD: evil}, branch=branch, author="mallory", message="sneak"))

    monkeypatch.setattr(RepoOpener, "_create_branch", then_a_push)
    await world.release("web", "1.0.0")
    pr = world.pull("Promote web 1.0.0 to staging")
    assert pushed and pr["merged"]
    assert world.emulator.file(world.repo, PROD) == DEMO_FILES[PROD]
    head = world.emulator.commit(world.repo, pr["head"]["sha"])
    assert [parent["sha"] for parent in head["parents"]] == [pr["base"]["sha"]]


async def test_a_pull_request_someone_opened_first_from_a_new_promotion_branch_is_not_adopted(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub answers Conveyor's PR 422 when one of that branch into that base is open: one a
    writer opened in the moment after the branch was made is theirs, not a retried job's."""
    creating = RepoOpener._create_branch
    opened: list[int] = []

    async def then_a_pull_request(opener: RepoOpener[Any], branch: str, sha: str) -> None:
        await creating(opener, branch, sha)
        if not opened:
            await world.emulator.push_files(world.repo, {"notes.txt": "mine\n"},
                                            branch=branch, author="mallory")
            pr = await world.emulator.open_pull(world.repo, branch, title="Mine",
                                                author="mallory")
            opened.append(int(pr["number"]))

    monkeypatch.setattr(RepoOpener, "_create_branch", then_a_pull_request)
    await world.release("web", "1.0.0")
    theirs = next(pr for pr in world.emulator.pulls(world.repo, state="all")
                  if pr["number"] == opened[0])
    assert not theirs["merged"] and [label["name"] for label in theirs["labels"]] == []
    assert world.emulator.file(world.repo, STAGING) == DEMO_FILES[STAGING]


COMMON = "components/common/kustomization.yaml"
LABELS = ("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
          "labels:\n  - pairs:\n      team: web\n")
MINER = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: miner\nspec:\n"
         "  selector: {matchLabels: {app: miner}}\n  template:\n"
         "    metadata: {labels: {app: miner}}\n    spec:\n      containers:\n"
         "        - name: miner\n          image: docker.io/evil/miner@sha256:" + "e" * 64 + "\n")


READING_COMMON = DEMO_FILES[PROD].replace(
    "resources:\n", "components:\n  - ../../../../components/common\nresources:\n")


async def mallorys_component(world: World) -> None:
    """The component on main, and a branch that adds a miner to it."""
    await world.emulator.push_files(world.repo, {COMMON: LABELS})
    await world.emulator.push_files(
        world.repo, {COMMON: LABELS + "resources:\n  - miner.yaml\n",
                     "components/common/miner.yaml": MINER},
        branch="mallory/common", author="mallory", message="tweak the component")


async def test_a_branch_behind_a_change_that_makes_production_read_its_files_fails() -> None:
    """The head renders as the branch was made; the merge renders as the default branch is:
    a component that production starts to read after the branch was made is judged in what
    the merge makes, not in the head that does not read it."""
    world = await world_with(evidence_only())
    try:
        await mallorys_component(world)
        labels = await hand_pr(world, PROD, READING_COMMON, title="Production labels")
        assert world.gate(labels)["conclusion"] == "success", summary(world.gate(labels))
        await world.emulator.merge_pull(world.repo, labels["number"], user="sre")
        await world.emulator.open_pull(world.repo, "mallory/common", title="Common tweak",
                                       author="mallory")
        await world.settle()
        failing(world, world.pull("Common tweak", state="open"),
                "docker.io/evil/miner is not under allowed_images")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_an_open_pr_is_judged_again_in_what_its_merge_makes_when_main_moves_on() -> None:
    """The PR's `base.sha` stays where the branch was when its head last changed: judged
    against it, a PR opened before production read its component passes for good. Judged
    in what the merge makes, it fails once main makes production read the component."""
    world = await world_with(evidence_only())
    try:
        await mallorys_component(world)
        await world.emulator.open_pull(world.repo, "mallory/common", title="Common tweak",
                                       author="mallory")
        await world.settle()
        tweak = world.pull("Common tweak", state="open")
        assert world.gate(tweak)["conclusion"] == "success", summary(world.gate(tweak))
        labels = await hand_pr(world, PROD, READING_COMMON, title="Production labels")
        assert world.gate(labels)["conclusion"] == "success", summary(world.gate(labels))
        await world.emulator.merge_pull(world.repo, labels["number"], user="sre")
        await world.settle()
        tweak = world.pull("Common tweak", state="open")
        assert tweak["base"]["sha"] != world.emulator.commit(world.repo, "main")["sha"]
        failing(world, tweak, "docker.io/evil/miner is not under allowed_images")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def sidecar_value(world: World) -> dict[str, Any]:
    """A PR that sets a default value no template reads yet: the miner as `sidecar`."""
    defaults = DEMO_FILES["charts/api/values.yaml"] + (
        "sidecar: docker.io/evil/miner@sha256:" + "e" * 64 + "\n")
    return await hand_pr(world, "charts/api/values.yaml", defaults, author="mallory",
                         branch="mallory/value", title="Sidecar value")


SIDECAR = """        {{- if .Values.sidecar }}
        - name: sidecar
          image: {{ .Values.sidecar | quote }}
        {{- end }}
"""


async def test_a_value_main_took_is_judged_with_the_template_a_pr_changes() -> None:
    """Two changes, each green alone: a template that runs `.Values.sidecar` when it is set,
    and a default value that sets it. Whichever merges second makes production run it."""
    world = await world_with(evidence_only())
    try:
        template = "charts/api/templates/deployment.yaml"
        await world.emulator.push_files(
            world.repo, {template: DEMO_FILES[template] + SIDECAR},
            branch="mallory/template", author="mallory", message="optional sidecar")
        await world.emulator.open_pull(world.repo, "mallory/template", title="Sidecar slot",
                                       author="mallory")
        await world.settle()
        slot = world.pull("Sidecar slot", state="open")
        assert world.gate(slot)["conclusion"] == "success", summary(world.gate(slot))
        value = await sidecar_value(world)
        assert world.gate(value)["conclusion"] == "success", summary(world.gate(value))
        await world.emulator.merge_pull(world.repo, value["number"], user="mallory")
        await world.settle()
        failing(world, world.pull("Sidecar slot", state="open"),
                "docker.io/evil/miner is not under allowed_images")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_merge_queue_commit_is_judged_with_the_prs_queued_ahead_of_it() -> None:
    """Queued together, the sidecar slot and its value are one commit: the second group's
    commit holds both, and its gate judges them so, while each PR alone passes."""
    world = await world_with(evidence_only())
    try:
        template = "charts/api/templates/deployment.yaml"
        slot = await hand_pr(world, template, DEMO_FILES[template] + SIDECAR, author="mallory",
                             branch="mallory/template", title="Sidecar slot")
        value = await sidecar_value(world)
        for pr in (slot, value):
            assert world.gate(pr)["conclusion"] == "success", summary(world.gate(pr))
        first = await world.emulator.merge_group(world.repo, slot["number"])
        second = await world.emulator.merge_group(world.repo, value["number"], behind=first)
        await world.settle()
        queued = {sha: world.emulator.check_runs(world.repo, sha, GATE) for sha in (first, second)}
        assert [run["conclusion"] for run in queued[first]] == ["success"]
        assert [run["conclusion"] for run in queued[second]] == ["failure"]
        assert "docker.io/evil/miner is not under allowed_images" in summary(queued[second][0])
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_a_file_both_main_and_the_branch_changed_fails_until_the_branch_is_updated(
        ) -> None:
    world = await world_with(evidence_only())
    try:
        named = DEMO_FILES[PROD].replace("resources:\n", "namePrefix: prod-\nresources:\n")
        pr = await hand_pr(world, PROD, named, title="Prefix production")
        assert world.gate(pr)["conclusion"] == "success", summary(world.gate(pr))
        await world.emulator.push_files(world.repo, {PROD: DEMO_FILES[PROD] + "# owned by sre\n"},
                                        author="sre", message="a note")
        await world.settle()
        failing(world, world.pull("Prefix production", state="open"),
                f"`{PROD}` changed both on `main` "
                "and on this branch since it was made")
    finally:
        await close_world(world)
    assert world.emulator.violations == []


async def test_promote_on_a_hand_written_pr_with_a_forged_marker_is_refused(
        merged_only: World) -> None:
    world = merged_only
    await staged(world)
    real = world.pull("Promote web 1.0.0 to staging")
    laundered = digest_of("web:6.6.6")
    await world.emulator.publish_container("acme", "web", laundered, ["6.6.6"],
                                           source_repo="acme/web", emit=False)
    text = pinned_kustomization("6.6.6", laundered)
    await world.emulator.push_files(world.repo, {STAGING: text}, branch="hand/staging")
    await world.emulator.open_pull(world.repo, "hand/staging", title="Hand staging",
                                   author="alice", body=forge(real["body"], digest=laundered,
                                                              version="6.6.6", tag="6.6.6"))
    await world.settle()
    forged = world.pull("Hand staging", state="open")
    await world.emulator.comment(world.repo, forged["number"], "alice", "/promote production")
    await world.settle()
    replies = [c["body"] for c in world.emulator.comments(world.repo, forged["number"])
               if c["user"]["login"].endswith("[bot]")]
    assert any("is not a promotion PR Conveyor opened" in body for body in replies), replies
    assert [pr["title"] for pr in world.open_pulls()] == ["Hand staging"]


async def test_a_forged_newer_marker_on_a_conveyor_branch_does_not_block_a_release(
        world: World) -> None:
    await staged(world)
    real = world.pull("Promote web 1.0.0 to staging")
    decoy = "conveyor/staging/web-" + "e" * 12
    await world.emulator.push_files(world.repo, {"README.md": "# decoy\n"}, branch=decoy)
    await world.emulator.open_pull(world.repo, decoy, title="Decoy", author="alice",
                                   body=forge(real["body"], version="9.9.9", tag="9.9.9",
                                              digest="sha256:" + "e" * 64))
    await world.settle()
    await world.release("web", "1.1.0")
    assert world.pull("Promote web 1.1.0 to staging")["merged"]


@pytest.mark.parametrize("command", ["/promote web {digest} production", "/promote production"])
async def test_an_edited_release_tag_is_not_the_next_promotions_version(
        world: World, command: str) -> None:
    digest = await staged(world)
    real = world.pull("Promote web 1.0.0 to staging")
    await world.emulator.edit_pull(world.repo, real["number"], user="alice",
                                   body=forge(real["body"], release_tag="v99.0.0",
                                              version="99.0.0"))
    await world.emulator.comment(world.repo, real["number"], "alice",
                                 command.format(digest=digest))
    await world.settle()
    pr = world.pull("Promote web 1.0.0 to production", state="open")
    assert "99.0.0" not in pr["body"]
    message = world.emulator.commit(world.repo, pr["head"]["sha"])["commit"]["message"]
    assert "Conveyor-Version: 1.0.0\n" in message and "99.0.0" not in message, message
    assert "Conveyor-Release: v1.0.0\n" in message, message


async def test_a_failed_tag_lookup_still_posts_a_failing_gate(world: World) -> None:
    world.emulator.registry.fail_with = 401  # the registry refuses every read
    tag_only = HEADER + '  - name: ghcr.io/acme/web\n    newTag: "1.0.0"\n'
    pr = await hand_pr(world, PROD, tag_only)
    failing(world, pr, "tag 1.0.0 could not be looked up",
            "registry ghcr.io answered 401 for acme/web: set CONVEYOR_REGISTRY_AUTH_FILE")


async def test_dropping_the_services_images_entry_fails(world: World) -> None:
    # Without its images entry the overlay runs the base's `ghcr.io/acme/web` as it stands.
    pr = await hand_pr(world, PROD, HEADER.replace("images:\n", "images: []\n"))
    failing(world, pr, "the head no longer sets ghcr.io/acme/web")


async def test_a_registry_override_beside_the_image_blocks_fails(world: World) -> None:
    values = world.emulator.file(world.repo, API_PROD)
    assert values is not None
    pr = await hand_pr(world, API_PROD, values + "global:\n  imageRegistry: evil.example\n")
    failing(world, pr, "imageRegistry 'evil.example' sets the registry of images")
