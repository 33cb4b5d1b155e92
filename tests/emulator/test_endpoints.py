"""Every endpoint once, through gidgethub over real HTTP, with OpenAPI validation on."""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import pytest
from gidgethub import BadRequest
from gidgethub.aiohttp import GitHubAPI

from conveyor_emulator import Emulator
from conveyor_emulator.driver.seeding import DEFAULT_PERMISSIONS

from .conftest import Receiver, app_jwt


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def collect(gh: GitHubAPI, url: str, **kw: Any) -> list[Any]:
    return [item async for item in gh.getiter(url, **kw)]


async def test_every_endpoint_once(emulator: Emulator, session: aiohttp.ClientSession,
                                   receiver: Receiver) -> None:
    em = emulator
    # the permissions of a CI app, which writes commit statuses as well
    inst = em.install("acme", permissions={**DEFAULT_PERMISSIONS, "statuses": "write"})
    jwt = app_jwt(em)
    app_gh = GitHubAPI(session, "conveyor-tests", base_url=em.base_url)
    assert (await app_gh.getitem("/app", jwt=jwt))["id"] == em.app_id
    assert [i["id"] for i in await app_gh.getitem("/app/installations", jwt=jwt)] == [inst]
    assert (await app_gh.getitem(f"/app/installations/{inst}", jwt=jwt))["id"] == inst
    assert (await app_gh.getitem("/repos/acme/deploy/installation", jwt=jwt))["id"] == inst
    token = (await app_gh.post(f"/app/installations/{inst}/access_tokens", data={},
                               jwt=jwt))["token"]
    gh = GitHubAPI(session, "conveyor-tests", oauth_token=token, base_url=em.base_url)
    R = "/repos/acme/deploy"

    repos = await collect(gh, "/installation/repositories", iterable_key="repositories")
    assert {r["full_name"] for r in repos} == {"acme/deploy", "acme/web", "acme/other"}
    assert (await gh.getitem(R))["default_branch"] == "main"

    # contents, git data
    readme = await gh.getitem(R + "/contents/README.md")
    assert base64.b64decode(readme["content"]).decode() == "hello\n"
    listing = await gh.getitem(R + "/contents/apps/web/overlays/staging")
    assert [e["name"] for e in listing] == ["kustomization.yaml"]
    put = await gh.put(R + "/contents/README.md", data={
        "message": "Update readme", "content": b64("hello again\n"), "sha": readme["sha"]})
    assert put["commit"]["verification"]["verified"] is True
    main_ref = await gh.getitem(R + "/git/ref/heads/main")
    head = main_ref["object"]["sha"]
    assert head == put["commit"]["sha"]
    assert len(await gh.getitem(R + "/git/matching-refs/heads/")) == 1
    commit = await gh.getitem(R + f"/git/commits/{head}")
    tree = await gh.getitem(R + f"/git/trees/{commit['tree']['sha']}?recursive=1")
    assert any(e["path"] == "README.md" for e in tree["tree"])
    blob = await gh.post(R + "/git/blobs", data={"content": "blob text\n", "encoding": "utf-8"})
    assert (await gh.getitem(R + f"/git/blobs/{blob['sha']}"))["size"] == 10
    new_tree = await gh.post(R + "/git/trees", data={"base_tree": commit["tree"]["sha"], "tree": [
        {"path": "apps/web/overlays/staging/kustomization.yaml", "mode": "100644",
         "type": "blob", "content": "images:\n- name: web\n  newTag: 1.1.0\n"},
        {"path": "notes.txt", "mode": "100644", "type": "blob", "sha": blob["sha"]},
        {"path": "README.md", "mode": "100644", "type": "blob", "sha": None},
    ]})
    new_commit = await gh.post(R + "/git/commits", data={
        "message": "Promote web 1.1.0", "tree": new_tree["sha"], "parents": [head]})
    assert new_commit["verification"]["verified"] is True
    await gh.post(R + "/git/refs", data={"ref": "refs/heads/promo", "sha": new_commit["sha"]})
    await gh.post(R + "/git/refs", data={"ref": "refs/heads/tmp", "sha": head})
    await gh.patch(R + "/git/refs/heads/tmp", data={"sha": new_commit["sha"], "force": True})
    await gh.delete(R + "/git/refs/heads/tmp")
    single = await gh.getitem(R + "/commits/promo")
    assert {f["filename"]: f["status"] for f in single["files"]} == {
        "README.md": "removed", "apps/web/overlays/staging/kustomization.yaml": "modified",
        "notes.txt": "added"}
    assert "+  newTag: 1.1.0" in single["files"][1]["patch"]
    history = await collect(gh, R + "/commits?sha=promo&path=README.md")
    assert len(history) == 3
    cmp = await gh.getitem(R + f"/compare/{head}...promo")
    assert cmp["ahead_by"] == 1 and cmp["status"] == "ahead"
    assert (await gh.getitem(R + "/branches/promo"))["commit"]["sha"] == new_commit["sha"]

    # pulls
    pr = await gh.post(R + "/pulls", data={"title": "Promote web", "head": "promo", "base": "main",
                                           "body": "body"})
    number = pr["number"]
    pulls = await collect(gh, R + "/pulls?state=open&head=acme:promo")
    assert [p["number"] for p in pulls] == [number]
    full = await gh.getitem(R + f"/pulls/{number}")
    assert full["mergeable"] is True and full["mergeable_state"] == "clean"
    await gh.patch(R + f"/pulls/{number}", data={"body": "new body"})
    files = await collect(gh, R + f"/pulls/{number}/files")
    assert len(files) == 3
    assert len(await collect(gh, R + f"/pulls/{number}/commits")) == 1
    await em.review("acme/deploy", number, "alice", "APPROVE")
    await gh.post(R + f"/pulls/{number}/reviews", data={"event": "COMMENT", "body": "gate ok"})
    reviews = await collect(gh, R + f"/pulls/{number}/reviews")
    assert [r["state"] for r in reviews] == ["APPROVED", "COMMENTED"]

    # issues, labels, comments, reactions
    await gh.post(R + "/labels", data={"name": "conveyor", "color": "0e8a16"})
    assert (await gh.getitem(R + "/labels/conveyor"))["color"] == "0e8a16"
    await gh.post(R + f"/issues/{number}/labels", data={"labels": ["conveyor", "env/staging"]})
    await gh.delete(R + f"/issues/{number}/labels/env%2Fstaging")
    assert [lab["name"] for lab in await collect(gh, R + "/labels")] == ["conveyor", "env/staging"]
    issue = await gh.post(R + "/issues", data={"title": "Dashboard", "body": "x",
                                               "labels": ["conveyor-dashboard"]})
    found = await collect(gh, R + "/issues?labels=conveyor-dashboard&state=open")
    assert [i["number"] for i in found] == [issue["number"]]
    await gh.patch(R + f"/issues/{issue['number']}", data={"body": "y"})
    assert (await gh.getitem(R + f"/issues/{issue['number']}"))["body"] == "y"
    comment = await gh.post(R + f"/issues/{number}/comments", data={"body": "hi"})
    await gh.patch(R + f"/issues/comments/{comment['id']}", data={"body": "hello"})
    assert (await gh.getitem(R + f"/issues/comments/{comment['id']}"))["body"] == "hello"
    assert len(await collect(gh, R + f"/issues/{number}/comments")) == 1
    r1 = await gh.post(R + f"/issues/comments/{comment['id']}/reactions",
                       data={"content": "eyes"})
    r2 = await gh.post(R + f"/issues/comments/{comment['id']}/reactions",
                       data={"content": "eyes"})
    assert r1["id"] == r2["id"]
    await gh.delete(R + f"/issues/comments/{comment['id']}")

    # checks and statuses
    sha = full["head"]["sha"]
    run = await gh.post(R + "/check-runs", data={
        "name": "conveyor/promotion-gate", "head_sha": sha, "status": "in_progress",
        "output": {"title": "Waiting", "summary": "soak",
                   "annotations": [{"path": "README.md", "start_line": 1, "end_line": 1,
                                    "annotation_level": "failure", "message": "bad"}]},
        "actions": [{"label": "Recheck", "description": "Re-evaluate", "identifier": "recheck"}]})
    await gh.patch(R + f"/check-runs/{run['id']}", data={
        "conclusion": "success", "output": {"title": "Passed", "summary": "all good"}})
    assert (await gh.getitem(R + f"/check-runs/{run['id']}"))["conclusion"] == "success"
    runs = await gh.getitem(
        R + f"/commits/{sha}/check-runs?check_name=conveyor/promotion-gate&filter=latest")
    assert runs["total_count"] == 1
    assert len(await collect(gh, R + f"/check-runs/{run['id']}/annotations")) == 1
    await gh.post(R + f"/statuses/{sha}", data={"state": "success", "context": "argocd/staging"})
    assert len(await collect(gh, R + f"/commits/{sha}/statuses")) == 1
    assert (await gh.getitem(R + f"/commits/{sha}/status"))["state"] == "success"

    # merge
    merged = await gh.put(R + f"/pulls/{number}/merge", data={"merge_method": "squash",
                                                              "sha": sha})
    assert merged["merged"] is True
    assert em.file("acme/deploy", "notes.txt") == "blob text\n"
    assert len(await collect(gh, R + f"/commits/{merged['sha']}/pulls")) == 1

    # deployments
    dep = await gh.post(R + "/deployments", data={
        "ref": merged["sha"], "environment": "staging", "auto_merge": False,
        "required_contexts": [], "payload": {"digest": "sha256:" + "a" * 64},
        "description": "sync", "transient_environment": False,
        "production_environment": False})
    await gh.post(R + f"/deployments/{dep['id']}/statuses", data={
        "state": "success", "log_url": "http://argo/log", "environment_url": "http://web"})
    deps = await collect(gh, R + "/deployments?environment=staging")
    assert [d["id"] for d in deps] == [dep["id"]]
    assert (await gh.getitem(R + f"/deployments/{dep['id']}"))["environment"] == "staging"
    assert len(await collect(gh, R + f"/deployments/{dep['id']}/statuses")) == 1

    # people
    perm = await gh.getitem(R + "/collaborators/alice/permission")
    assert (perm["permission"], perm["role_name"]) == ("write", "write")
    em.add_team("acme", "sre", ["bob"])
    assert (await gh.getitem("/orgs/acme/teams/sre/memberships/bob"))["state"] == "active"
    assert (await gh.getitem("/users/alice"))["name"] == "Alice"

    # releases, tags, packages, attestations, runs
    W = "/repos/acme/web"
    web_head = em.world.repo_by_name("acme/web").branch_sha("main")
    assert web_head is not None
    await em.create_tag("acme/web", "v1.4.2", annotated=True)
    rel = await em.publish_release("acme/web", "v1.4.2")
    assert (await gh.getitem(W + "/releases/tags/v1.4.2"))["id"] == rel["id"]
    assert (await gh.getitem(W + f"/releases/{rel['id']}"))["tag_name"] == "v1.4.2"
    assert len(await collect(gh, W + "/releases")) == 1
    tags = await collect(gh, W + "/tags")
    assert tags[0]["commit"]["sha"] == web_head
    tag_ref = await gh.getitem(W + "/git/ref/tags/v1.4.2")
    assert tag_ref["object"]["type"] == "tag"
    assert (await gh.getitem(W + f"/git/tags/{tag_ref['object']['sha']}"))["tag"] == "v1.4.2"
    digest = em.build_image("web:1.4.2")
    ver = await em.publish_container("acme", "web", digest, ["1.4.2"], source_repo="acme/web",
                                     revision=web_head)
    # GitHub refuses the Packages REST API to installation tokens (enabledForGitHubApps: false)
    for url in ("/orgs/acme/packages/container/web/versions",
                f"/orgs/acme/packages/container/web/versions/{ver['id']}"):
        with pytest.raises(BadRequest) as refused:
            await gh.getitem(url)
        assert refused.value.status_code == 403
        assert str(refused.value) == "Resource not accessible by integration"
    assert len(em.violations) == 2 and all("enabledForGitHubApps: false" in v
                                           for v in em.violations)
    em.violations.clear()
    em.add_attestation("acme/web", digest, commit=web_head, run_id=77)
    att = await gh.getitem(W + f"/attestations/{digest}")
    assert att["attestations"][0]["bundle"]["dsseEnvelope"]["payloadType"]
    assert (await gh.getitem(f"/orgs/acme/attestations/{digest}"))["attestations"]
    # predicate_type: `provenance` and `sbom` name families, any other text one type
    sbom = em.add_attestation("acme/web", digest, commit=web_head, statement={
        "_type": "https://in-toto.io/Statement/v1", "subject": [],
        "predicateType": "https://spdx.dev/Document/v2.3", "predicate": {}})
    em.add_attestation_bundle("acme/web", digest, {"dsseEnvelope": {"payload": "not base64"}})
    listed = await gh.getitem(W + f"/attestations/{digest}?predicate_type=provenance")
    assert len(listed["attestations"]) == 1
    listed = await gh.getitem(W + f"/attestations/{digest}?predicate_type=sbom")
    assert [a["bundle"] for a in listed["attestations"]] == [sbom]
    exact = await gh.getitem(
        f"/orgs/acme/attestations/{digest}?predicate_type=https://spdx.dev/Document/v2.3")
    assert len(exact["attestations"]) == 1
    assert len((await gh.getitem(W + f"/attestations/{digest}"))["attestations"]) == 3
    with pytest.raises(BadRequest) as missing:
        await gh.getitem(W + f"/attestations/{digest}?predicate_type=release")
    assert missing.value.status_code == 404
    run_json = em.add_workflow_run("acme/web", web_head)
    runs_list = await gh.getitem(W + f"/actions/runs?head_sha={web_head}")
    assert runs_list["workflow_runs"][0]["id"] == run_json["id"]
    assert (await gh.getitem(W + f"/actions/runs/{run_json['id']}"))["head_sha"] == web_head

    # deliveries and manifest conversion
    await em.settle()
    deliveries = await app_gh.getitem("/app/hook/deliveries?per_page=5", jwt=jwt)
    assert len(deliveries) == 5
    one = await app_gh.getitem(f"/app/hook/deliveries/{deliveries[0]['id']}", jwt=jwt)
    assert one["request"]["payload"]
    await app_gh.post(f"/app/hook/deliveries/{deliveries[0]['id']}/attempts", data={}, jwt=jwt)
    code = em.issue_manifest_code({"name": "Conveyor", "url": "http://x"})
    async with session.post(em.base_url + f"/app-manifests/{code}/conversions") as resp:
        assert resp.status == 201
        conversion = await resp.json()
    assert conversion["pem"].startswith("-----BEGIN")
    await em.settle()
    assert em.violations == [], "\n".join(em.violations)
