"""Release trains over HTTP: one pull request moving several services of a group."""

from __future__ import annotations

import http
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import gidgethub
import pytest

from bot.domain.promotions.marker import parse_marker
from bot.domain.trains import train_digest
from bot.promotion.resync.reconcile import resync_all
from bot.promotion.trains import flows as train_flows
from bot.promotion.trains import opener as train_opener
from bot.promotion.triggers import merging
from bot.sandbox.demo import digest_of
from tests.harness import World, close_world, commit_signing, make_world

BOT = "conveyor[bot]"
CONTENT_METHODS = ("POST", "PATCH", "PUT", "DELETE")

POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
  api:
    image: ghcr.io/acme/api
    source: acme/api
    paths: {staging: apps/shop/staging.yaml, production: apps/shop/prod.yaml}
  cart:
    image: ghcr.io/acme/cart
    source: acme/api
    paths: {staging: apps/shop/staging.yaml, production: apps/shop/prod.yaml}
environments:
  - name: staging
    path: apps/{service}/staging.yaml
    auto_merge: true
  - name: production
    path: apps/{service}/prod.yaml
    after: staging
    evidence: [merged, deployed]
    deployed_context: argocd/staging
groups:
  storefront: [web, api, cart]
  checkout: [api, cart]
"""

WEB_PATHS = {"staging": "apps/web/staging.yaml", "production": "apps/web/prod.yaml"}
SHOP_PATHS = {"staging": "apps/shop/staging.yaml", "production": "apps/shop/prod.yaml"}


def image(name: str, version: str) -> tuple[str, str, str]:
    return name, version, digest_of(f"{name}:{version}")


def kustomization(*images: tuple[str, str, str]) -> str:
    """A Kustomize overlay pinning each (service, version, digest); comments kept around."""
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization",
             "resources:", "  - ../base", "images:"]
    for name, version, digest in images:
        lines += [f"  - name: ghcr.io/acme/{name}  # {name}", f'    newTag: "{version}"',
                  f"    digest: {digest}"]
    return "\n".join(lines) + "\n"


def files(staging: dict[str, str], production: dict[str, str]) -> dict[str, str]:
    """``staging``/``production``: service → version; api and cart share one overlay."""
    def layout(versions: dict[str, str], env: str) -> dict[str, str]:
        return {
            WEB_PATHS[env]: kustomization(image("web", versions["web"])),
            SHOP_PATHS[env]: kustomization(image("api", versions["api"]),
                                           image("cart", versions["cart"])),
        }
    return {".github/conveyor.yml": POLICY, "README.md": "# deploy\n",
            **layout(staging, "staging"), **layout(production, "production")}


@pytest.fixture
async def trains() -> AsyncIterator[World]:
    built = await make_world(files=files({"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"},
                                         {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}))
    try:
        yield built
    finally:
        await close_world(built)
    assert built.emulator.violations == [], built.emulator.violations


async def stage(world: World, versions: dict[str, str], *, deployed: bool = True) -> str:
    """Merge a staging change by hand (the evidence a train reads), then Argo CD reports it."""
    head = await world.emulator.push_files(world.repo, {
        WEB_PATHS["staging"]: kustomization(image("web", versions["web"])),
        SHOP_PATHS["staging"]: kustomization(image("api", versions["api"]),
                                             image("cart", versions["cart"])),
    }, message="Stage a release")
    if deployed:
        await world.emulator.set_status(world.repo, head, "argocd/staging", "success")
    await world.settle()
    return head


async def say(world: World, number: int, body: str, user: str = "alice") -> str:
    posted = await world.emulator.comment(world.repo, number, user, body)
    await world.settle()
    marker = f"<!-- conveyor:reply {posted['id']} -->"
    replies = [c["body"] for c in world.emulator.comments(world.repo, number)
               if c["user"]["login"] == BOT and marker in c["body"]]
    assert len(replies) == 1, replies
    return replies[0]


async def issue(world: World) -> int:
    created = await world.emulator.open_issue(world.repo, "Release", author="alice")
    await world.settle()
    return int(created["number"])


def trains_open(world: World) -> list[dict[str, Any]]:
    return [pr for pr in world.open_pulls() if "train" in
            {label["name"] for label in pr["labels"]}]


async def test_a_train_moves_the_group_in_one_commit_and_names_what_it_leaves_out(
        trains: World) -> None:
    world = trains
    await world.emulator.push_files(world.repo, {
        SHOP_PATHS["production"]: kustomization(image("api", "1.0.0"), image("cart", "2.0.0")),
    }, message="cart 2.0.0 reached production earlier")
    await stage(world, {"web": "1.1.0", "api": "1.2.0", "cart": "2.0.0"})
    base = world.emulator.commit(world.repo, "main")["sha"]
    number = await issue(world)

    reply = await say(world, number, "/promote production storefront")

    [pr] = trains_open(world)
    moved = [image("web", "1.1.0")[2], image("api", "1.2.0")[2]]
    assert pr["title"] == "Promote storefront to production (2 services)"
    assert pr["head"]["ref"] == (
        f"conveyor/production/train-storefront-{train_digest(moved)[7:19]}")
    assert {label["name"] for label in pr["labels"]} == {"conveyor", "env/production", "train"}
    assert f"✅ opened #{pr['number']}" in reply
    assert "Left out, already at that digest: cart `2.0.0`" in reply
    head = world.emulator.commit(world.repo, pr["head"]["sha"])
    assert [parent["sha"] for parent in head["parents"]] == [base]  # one commit on main
    assert "Conveyor-Train: storefront" in head["commit"]["message"]
    shop = world.emulator.file(world.repo, SHOP_PATHS["production"], pr["head"]["sha"])
    assert shop == kustomization(image("api", "1.2.0"), image("cart", "2.0.0"))
    web = world.emulator.file(world.repo, WEB_PATHS["production"], pr["head"]["sha"])
    assert web == kustomization(image("web", "1.1.0"))
    marker = parse_marker(pr["body"])
    assert marker is not None and marker.group == "storefront" and marker.kind == "train"
    assert [(m.service, m.digest) for m in marker.members] == [
        ("web", moved[0]), ("api", moved[1])]
    assert "Left out, already at that digest in production: cart `2.0.0`." in pr["body"]
    assert pr["body"].count("#### ") == 2  # one provenance block per service

    run = world.gate(pr)
    assert run["conclusion"] == "success", run["output"]
    summary = run["output"]["summary"]
    assert "web → production" in summary and "api → production" in summary

    again = await say(world, number, "/promote production storefront")
    assert f"already open: #{pr['number']}" in again
    assert len(trains_open(world)) == 1


async def test_nothing_to_move_gets_a_reply(trains: World) -> None:
    world = trains
    number = await issue(world)
    reply = await say(world, number, "/promote production storefront")
    assert "nothing to move" in reply
    assert "Left out, already at that digest: web `1.0.0`, api `1.0.0`, cart `1.0.0`" in reply
    assert world.open_pulls() == []


async def test_the_gate_judges_every_service_and_names_the_one_without_evidence(
        trains: World) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.0.0"})
    # cart 1.1.0 reaches the staging file after Argo CD's last report: no deployed evidence
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"}, deployed=False)
    number = await issue(world)
    await say(world, number, "/promote production storefront")
    [pr] = trains_open(world)
    assert pr["title"] == "Promote storefront to production (3 services)"
    run = world.gate(pr)
    assert run["conclusion"] == "failure", run["output"]
    summary = run["output"]["summary"]
    cart = summary[summary.index("cart → production"):]
    cart = cart[:cart.index("###")] if "###" in cart else cart
    assert "❌" in cart and "deployed" in cart
    # api shares cart's file and kept its digest: Argo CD's report on the earlier commit counts
    api = summary[summary.index("api → production"):summary.index("cart → production")]
    web = summary[summary.index("web → production"):]
    web = web[:web.index("###")]
    assert "❌" not in api and "❌" not in web


async def test_a_newer_train_supersedes_the_older_one_and_older_single_service_prs(
        trains: World) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"})
    web = image("web", "1.1.0")
    await world.emulator.publish_container("acme", "web", web[2], ["1.1.0"],
                                           source_repo="acme/web", emit=False)
    number = await issue(world)
    await say(world, number, f"/promote web {web[2]} production")
    single = world.pull("Promote web 1.1.0 to production", state="open")

    reply = await say(world, number, "/promote production storefront")
    first = world.pull("Promote storefront to production", state="open")
    assert f"Superseded: #{single['number']}." in reply
    closed = world.pull("Promote web 1.1.0 to production")
    assert closed["state"] == "closed" and not closed["merged"]
    assert [c["body"] for c in world.emulator.comments(world.repo, single["number"])
            if c["user"]["login"] == BOT] == [f"Superseded by #{first['number']}."]
    assert single["head"]["ref"] not in world.emulator.branches(world.repo)

    await stage(world, {"web": "1.2.0", "api": "1.2.0", "cart": "1.1.0"})
    reply = await say(world, number, "/promote production storefront")
    [second] = trains_open(world)
    assert second["number"] != first["number"]
    assert second["title"] == "Promote storefront to production (3 services)"
    assert f"Superseded: #{first['number']}." in reply
    assert [c["body"] for c in world.emulator.comments(world.repo, first["number"])
            if c["user"]["login"] == BOT] == [f"Superseded by #{second['number']}."]
    assert world.open_pulls() == [second]


async def test_rollback_of_a_group_restores_the_previous_combination(trains: World) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"})
    number = await issue(world)
    await say(world, number, "/promote production storefront")
    [train] = trains_open(world)
    await world.emulator.merge_pull(world.repo, train["number"], user="bob")
    await world.settle()

    reply = await say(world, number, "/rollback storefront production")
    [back] = trains_open(world)
    before = [image(name, "1.0.0") for name in ("web", "api", "cart")]
    assert back["title"] == "Roll back storefront to production (3 services)"
    assert back["head"]["ref"] == (
        f"conveyor/rollback/production/train-storefront-"
        f"{train_digest(d for _, _, d in before)[7:19]}")
    assert {label["name"] for label in back["labels"]} == {
        "conveyor", "env/production", "train", "rollback"}
    assert f"✅ opened #{back['number']}: rollback storefront to production" in reply
    sha = back["head"]["sha"]
    assert world.emulator.file(world.repo, WEB_PATHS["production"], sha) == kustomization(
        before[0])
    assert world.emulator.file(world.repo, SHOP_PATHS["production"], sha) == kustomization(
        before[1], before[2])
    marker = parse_marker(back["body"])
    assert marker is not None and marker.kind == "rollback" and marker.group == "storefront"
    assert marker.is_train and marker.is_rollback
    run = world.gate(back)
    assert run["conclusion"] == "success", run["output"]  # each digest ran there before


async def test_rollback_after_a_single_service_change_moves_only_that_service(
        trains: World) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"})
    number = await issue(world)
    await say(world, number, "/promote production storefront")
    [train] = trains_open(world)
    await world.emulator.merge_pull(world.repo, train["number"], user="bob")
    await world.settle()
    await world.emulator.push_files(world.repo, {
        WEB_PATHS["production"]: kustomization(image("web", "1.1.1")),
    }, message="Hotfix web in production")
    await world.settle()

    reply = await say(world, number, "/rollback storefront production")
    [back] = trains_open(world)
    assert back["title"] == "Roll back storefront to production (1 service)"
    assert world.emulator.file(world.repo, WEB_PATHS["production"], back["head"]["sha"]) == (
        kustomization(image("web", "1.1.0")))
    assert "left as they are: api, cart." in reply


async def test_rollback_of_a_group_that_never_changed_is_refused(trains: World) -> None:
    world = trains
    number = await issue(world)
    reply = await say(world, number, "/rollback storefront production")
    assert "❌ no service of the group changed in production" in reply
    assert world.open_pulls() == []


MANY = 30


def many_services_files(version: str) -> dict[str, str]:
    services = "".join(f"  svc{i:02d}: {{image: ghcr.io/acme/svc{i:02d}, source: acme/web}}\n"
                       for i in range(MANY))
    policy = (
        'version: 1\nallowed_images: ["ghcr.io/acme/"]\nservices:\n' + services
        + "environments:\n  - name: staging\n    path: apps/{service}/staging.yaml\n"
        "  - name: production\n    path: apps/{service}/prod.yaml\n    after: staging\n"
    )
    found = {".github/conveyor.yml": policy}
    for i in range(MANY):
        for env in ("staging", "prod"):
            found[f"apps/svc{i:02d}/{env}.yaml"] = kustomization(image(f"svc{i:02d}", version))
    return found


async def test_a_train_of_thirty_services_is_one_commit_and_eight_writes_in_all() -> None:
    world = await make_world(files=many_services_files("1.0.0"))
    try:
        await world.emulator.push_files(world.repo, {
            f"apps/svc{i:02d}/staging.yaml": kustomization(image(f"svc{i:02d}", "2.0.0"))
            for i in range(MANY)}, message="Stage 2.0.0 everywhere")
        await world.settle()
        base = world.emulator.commit(world.repo, "main")["sha"]
        number = await issue(world)
        world.emulator.requests.reset()

        reply = await say(world, number, "/promote production --all")

        [pr] = world.open_pulls()
        assert pr["title"] == f"Promote all to production ({MANY} services)"
        assert f"✅ opened #{pr['number']}: train all to production ({MANY} services" in reply
        head = world.emulator.commit(world.repo, pr["head"]["sha"])
        assert [parent["sha"] for parent in head["parents"]] == [base]
        assert len(head["files"]) == MANY
        # the dashboard issue's debounced refresh is no part of the train (its timer fires
        # after a few seconds of wall-clock time, so a slow run sees it here)
        dashboard = {("POST", "/repos/{owner}/{repo}/issues"),
                     ("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}")}
        writes = sorted((e.method, e.path) for e in world.emulator.requests.entries
                        if e.method in CONTENT_METHODS and (e.method, e.path) not in dashboard)
        repo = "/repos/{owner}/{repo}"
        # no 👀 reaction: the reply follows within the same job
        receipt = [] if commit_signing() else [
            ("POST", f"{repo}/check-runs")]  # conveyor/commit: GitHub did not sign the commit
        assert writes == sorted([
            ("POST", f"{repo}/git/trees"),  # the thirty files, one tree
            ("POST", f"{repo}/git/commits"),  # one commit
            ("POST", f"{repo}/git/refs"),  # its branch
            *receipt,
            ("POST", f"{repo}/pulls"),
            ("POST", f"{repo}/issues/{{issue_number}}/labels"),
            ("POST", f"{repo}/check-runs"),  # the gate, once
            ("POST", f"{repo}/check-runs"),  # conveyor/config-check of the new PR
            ("POST", f"{repo}/issues/{{issue_number}}/comments"),  # the reply
        ]), "\n".join(f"{m} {p}" for m, p in writes)
        # within the train's job a release tag and a digest's attestation are asked once: the
        # tags every service shares (v2.0.0, 2.0.0) once, the two named after the service each;
        # the gate asks for no attestation where no environment requires one
        reads = Counter(e.path for e in world.emulator.requests.entries if e.method == "GET")
        assert reads["/repos/{owner}/{repo}/releases/tags/{tag}"] == 2 + 2 * MANY
        assert reads["/repos/{owner}/{repo}/attestations/{subject_digest}"] == MANY
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_status_shows_the_open_train_beside_each_service_it_moves(trains: World) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.0.0", "cart": "1.2.0"})
    number = await issue(world)
    await say(world, number, "/promote production storefront")
    [pr] = trains_open(world)
    status = await say(world, number, "/status")
    web = status[status.index("### web"):status.index("### api")]
    api = status[status.index("### api"):status.index("### cart")]
    cart = status[status.index("### cart"):]
    assert f"#{pr['number']} `1.1.0` (train storefront)" in web
    assert f"#{pr['number']}" not in api  # api is left out: already at that digest
    assert f"#{pr['number']} `1.2.0` (train storefront)" in cart
    group = await say(world, number, "/status checkout")
    assert "### api" in group and "### cart" in group and "### web" not in group


async def release_together(world: World, state: str = "open") -> dict[str, Any]:
    """alice releases acme/api 2.0.0 and CI publishes its three images: the staging train."""
    await world.emulator.create_tag("acme/api", "v2.0.0")
    await world.emulator.publish_release("acme/api", "v2.0.0", author="alice")
    for name in ("web", "api", "cart"):
        await world.emulator.publish_container("acme", name, image(name, "2.0.0")[2],
                                               ["2.0.0"], source_repo="acme/api")
    await world.settle()
    return world.pull("Promote storefront to staging (3 services)", state=state)


TOGETHER_POLICY = POLICY.replace("source: acme/web", "source: acme/api").replace(
    "  storefront: [web, api, cart]", "  storefront: {services: [web, api, cart], together: true}")


async def test_together_waits_for_the_third_image_then_opens_one_staging_train() -> None:
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions),
                                    ".github/conveyor.yml": TOGETHER_POLICY})
    try:
        for name in ("api", "cart"):
            await world.emulator.publish_container("acme", name, image(name, "2.0.0")[2],
                                                   ["2.0.0"], source_repo="acme/api")
            await world.settle()
        await world.emulator.create_tag("acme/api", "v2.0.0")
        await world.emulator.publish_release("acme/api", "v2.0.0", author="alice")
        await world.settle()
        assert world.emulator.pulls(world.repo, state="all") == []  # web 2.0.0 is not out yet

        await world.emulator.publish_container("acme", "web", image("web", "2.0.0")[2],
                                               ["2.0.0"], source_repo="acme/api")
        await world.settle()

        [pr] = world.emulator.pulls(world.repo, state="all")
        assert pr["title"] == "Promote storefront to staging (3 services)"
        assert pr["merged"]  # staging auto-merges
        assert {label["name"] for label in pr["labels"]} == {"conveyor", "env/staging", "train"}
        assert world.emulator.file(world.repo, WEB_PATHS["staging"]) == kustomization(
            image("web", "2.0.0"))
        assert world.emulator.file(world.repo, SHOP_PATHS["staging"]) == kustomization(
            image("api", "2.0.0"), image("cart", "2.0.0"))
        marker = parse_marker(pr["body"])
        assert marker is not None and [m.service for m in marker.members] == [
            "web", "api", "cart"]
        assert all(m.source_sha for m in marker.members)  # the release's commit, for each

        # the resync asks again for every service's newest release: the train is merged and
        # every file already pins its digest, so nothing new opens
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        assert len(world.emulator.pulls(world.repo, state="all")) == 1
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_a_staging_train_whose_merge_failed_is_merged_by_the_resync_after_its_gate(
        monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions),
                                    ".github/conveyor.yml": TOGETHER_POLICY})
    try:
        async def merge_fails(*args: object, **kwargs: object) -> bool:
            raise gidgethub.BadRequest(http.HTTPStatus.BAD_GATEWAY)

        with monkeypatch.context() as patched:
            patched.setattr(merging, "merge_promotion", merge_fails)
            train = await release_together(world)
        assert not train["merged"]

        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        [train] = world.emulator.pulls(world.repo, state="all")
        assert train["merged"]
        assert world.gate(train)["conclusion"] == "success"
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_together_is_completed_by_the_resync_when_the_last_event_was_lost() -> None:
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions),
                                    ".github/conveyor.yml": TOGETHER_POLICY})
    try:
        await world.emulator.create_tag("acme/api", "v2.0.0")
        await world.emulator.publish_release("acme/api", "v2.0.0", author="alice")
        await world.settle()
        for name in ("web", "api", "cart"):  # published without events reaching Conveyor
            await world.emulator.publish_container("acme", name, image(name, "2.0.0")[2],
                                                   ["2.0.0"], source_repo="acme/api", emit=False)
        assert world.emulator.pulls(world.repo, state="all") == []

        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        [pr] = world.emulator.pulls(world.repo, state="all")
        assert pr["title"] == "Promote storefront to staging (3 services)" and pr["merged"]
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_a_merged_train_records_a_source_deployment_per_service(trains: World) -> None:
    world = trains
    await world.emulator.create_tag("acme/web", "v1.1.0")
    await world.emulator.publish_release("acme/web", "v1.1.0", author="alice")
    await world.settle()  # its image is not published: nothing opens
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.0.0"})
    number = await issue(world)
    await say(world, number, "/promote production storefront")
    [pr] = trains_open(world)
    await world.emulator.merge_pull(world.repo, pr["number"], user="bob")
    await world.settle()

    tagged = world.emulator.commit("acme/web", "v1.1.0")["sha"]
    [deployment] = [d for d in world.emulator.deployments("acme/web")
                    if d["environment"] == "production"]
    assert deployment["sha"] == tagged
    assert deployment["payload"]["service"] == "web"
    assert deployment["payload"]["promotion_pr"] == pr["html_url"]
    # api has no release, hence no known source commit: nothing is reported for it
    assert [d for d in world.emulator.deployments("acme/api")
            if d["environment"] == "production"] == []


async def test_a_merged_train_opens_the_next_train_where_promote_is_auto() -> None:
    policy = TOGETHER_POLICY.replace("    evidence: [merged, deployed]\n    deployed_context: "
                                     "argocd/staging\n", "    promote: auto\n")
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions), ".github/conveyor.yml": policy})
    try:
        staging = await release_together(world, state="all")
        assert staging["merged"]
        production = world.pull("Promote storefront to production (3 services)", state="open")
        marker = parse_marker(production["body"])
        assert marker is not None and marker.requester == "alice"
        tagged = world.emulator.commit("acme/api", "v2.0.0")["sha"]
        assert [(m.service, m.source_sha) for m in marker.members] == [
            ("web", tagged), ("api", tagged), ("cart", tagged)]
        assert world.gate(production)["conclusion"] == "success"

        reply = await say(world, staging["number"], "/promote production")
        assert "is a release train of storefront: `/promote production storefront`" in reply
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_the_resync_closes_an_older_train_left_open_beside_a_newer_one(
        trains: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"})
    number = await issue(world)
    await say(world, number, "/promote production storefront")
    [older] = trains_open(world)
    # a newer train whose opener stopped before closing the older one (a crash, say)
    async def stopped(*args: object) -> None:
        raise RuntimeError("the process stopped here")

    with monkeypatch.context() as patched:
        patched.setattr(train_opener, "close_superseded", stopped)
        await stage(world, {"web": "1.2.0", "api": "1.1.0", "cart": "1.1.0"})
        await world.emulator.comment(world.repo, number, "alice",
                                     "/promote production storefront")
        await world.settle()
    [newer] = [pr for pr in trains_open(world) if pr["number"] != older["number"]]

    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    assert [pr["number"] for pr in world.open_pulls()] == [newer["number"]]
    assert [c["body"] for c in world.emulator.comments(world.repo, older["number"])
            if c["user"]["login"] == BOT] == [f"Superseded by #{newer['number']}."]


async def test_one_approving_review_counts_for_the_whole_train() -> None:
    policy = POLICY.replace("    deployed_context: argocd/staging\n",
                            "    deployed_context: argocd/staging\n    approvals: 1\n"
                            '    approvers: ["@acme/sre"]\n')
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions), ".github/conveyor.yml": policy})
    try:
        await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"})
        number = await issue(world)
        await say(world, number, "/promote production storefront")
        [pr] = trains_open(world)
        run = world.gate(pr)
        assert run["conclusion"] == "action_required", run["output"]
        assert run["output"]["summary"].count("approval") == 1  # once, for the pull request

        await world.emulator.review(world.repo, pr["number"], "bob", "APPROVE")
        await world.settle()
        assert world.gate(pr)["conclusion"] == "success", world.gate(pr)["output"]
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_a_service_without_a_digest_upstream_or_not_admitted_stops_the_train() -> None:
    policy = POLICY.replace("    after: staging\n", '    after: staging\n    tags: "semver:<2"\n')
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions), ".github/conveyor.yml": policy})
    try:
        await world.emulator.push_files(world.repo, {
            WEB_PATHS["staging"]: kustomization(image("web", "1.1.0")).replace(
                f"    digest: {image('web', '1.1.0')[2]}\n", ""),
        }, message="web by tag only")
        await world.settle()
        number = await issue(world)
        reply = await say(world, number, "/promote production storefront")
        assert ("❌ not opened: the train takes every service's digest from staging, and these "
                "have none there: web (not pinned by digest in `apps/web/staging.yaml`)") in reply

        await stage(world, {"web": "1.1.0", "api": "2.0.0", "cart": "1.1.0"})
        reply = await say(world, number, "/promote production storefront")
        assert "❌ not opened: api 2.0.0 is not admitted in production (tag policy `semver:<2`)" \
            in reply
        assert world.open_pulls() == []
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_the_resync_follows_a_merged_train_whose_event_was_lost_but_never_reopens_one(
        ) -> None:
    policy = TOGETHER_POLICY.replace("    auto_merge: true\n", "").replace(
        "    evidence: [merged, deployed]\n    deployed_context: argocd/staging\n",
        "    promote: auto\n")
    versions = {"web": "1.0.0", "api": "1.0.0", "cart": "1.0.0"}
    world = await make_world(files={**files(versions, versions), ".github/conveyor.yml": policy})
    try:
        staging = await release_together(world)
        webhook, world.emulator.webhook_url = world.emulator.webhook_url, None
        await world.emulator.merge_pull(world.repo, staging["number"], user="bob")
        await world.settle()
        world.emulator.webhook_url = webhook  # the merge event never reached Conveyor
        assert [pr["number"] for pr in world.open_pulls()] == []

        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        production = world.pull("Promote storefront to production (3 services)", state="open")

        await world.emulator.close_pull(world.repo, production["number"], user="bob")
        await world.settle()
        await resync_all(world.conveyor.capabilities.resync)
        await world.settle()
        assert world.open_pulls() == []  # a train someone closed is not opened again
        assert world.emulator.violations == []
    finally:
        await close_world(world)


async def test_a_leftover_branch_is_reset_and_an_entry_environment_is_refused(
        trains: World) -> None:
    world = trains
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.0.0"})
    moved = [image("web", "1.1.0")[2], image("api", "1.1.0")[2]]
    branch = f"conveyor/production/train-storefront-{train_digest(moved)[7:19]}"
    await world.emulator.push_files(world.repo, {"README.md": "# left behind\n"}, branch=branch,
                                    author=BOT, message="an interrupted attempt")
    number = await issue(world)

    refused = await say(world, number, "/promote staging storefront")
    assert "❌ staging is an entry environment" in refused
    reply = await say(world, number, "/promote production storefront")

    [pr] = trains_open(world)
    assert pr["head"]["ref"] == branch and f"✅ opened #{pr['number']}" in reply
    head = world.emulator.commit(world.repo, pr["head"]["sha"])
    assert sorted(f["filename"] for f in head["files"]) == [
        SHOP_PATHS["production"], WEB_PATHS["production"]]
    assert world.emulator.file(world.repo, "README.md", pr["head"]["sha"]) == "# deploy\n"


async def test_a_train_too_large_is_refused_before_any_lookup(
        trains: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world = trains
    monkeypatch.setattr(train_flows, "MAX_TRAIN_SERVICES", 2)
    await stage(world, {"web": "1.1.0", "api": "1.1.0", "cart": "1.1.0"})
    number = await issue(world)
    world.emulator.requests.reset()
    reply = await say(world, number, "/promote production storefront")
    assert ("❌ not opened: a train moves at most 2 services (one pull request body holds them "
            "all); 3 would move: split the group into smaller groups") in reply
    looked_up = [e.path for e in world.emulator.requests.entries
                 if "attestations" in e.path or "releases" in e.path]
    assert looked_up == []
    assert world.open_pulls() == []
