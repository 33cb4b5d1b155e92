"""Smaller GitHub behaviours: delivery cursors, check-run limits, manifest apps, history."""

from __future__ import annotations

import time

import aiohttp
import jwt
import pytest
from gidgethub import BadRequest
from gidgethub.aiohttp import GitHubAPI

from conveyor_emulator import Emulator

from .conftest import Receiver, app_jwt

R = "/repos/acme/deploy"


async def test_delivery_cursor_pagination(emulator: Emulator, gh: GitHubAPI,
                                          session: aiohttp.ClientSession,
                                          receiver: Receiver) -> None:
    em = emulator
    for i in range(7):
        await em.push_files("acme/deploy", {f"f{i}.txt": "x\n"})
    app_gh = GitHubAPI(session, "t", base_url=em.base_url)
    token = app_jwt(em)
    seen = [d async for d in app_gh.getiter("/app/hook/deliveries?per_page=3", jwt=token)]
    assert len(seen) == len(em.deliveries)
    assert [d["id"] for d in seen] == sorted((d.id for d in em.deliveries), reverse=True)
    assert {d["status_code"] for d in seen} == {202}
    assert em.violations == []


async def test_check_run_annotation_limit(emulator: Emulator, gh: GitHubAPI) -> None:
    head = emulator.world.repo_by_name("acme/deploy").branch_sha("main")
    annotations = [{"path": "README.md", "start_line": 1, "end_line": 1,
                    "annotation_level": "warning", "message": str(i)} for i in range(51)]
    with pytest.raises(BadRequest) as err:
        await gh.post(R + "/check-runs", data={
            "name": "conveyor/config-check", "head_sha": head,
            "output": {"title": "t", "summary": "s", "annotations": annotations}})
    assert err.value.status_code == 422
    run = await gh.post(R + "/check-runs", data={
        "name": "conveyor/config-check", "head_sha": head,
        "output": {"title": "t", "summary": "s", "annotations": annotations[:50]}})
    await gh.patch(R + f"/check-runs/{run['id']}", data={
        "output": {"title": "t", "summary": "s", "annotations": annotations[50:]}})
    assert len([a async for a in gh.getiter(R + f"/check-runs/{run['id']}/annotations")]) == 51
    listed = emulator.check_runs("acme/deploy", "main", "conveyor/config-check")
    assert listed[0]["output"]["annotations_count"] == 51


async def test_manifest_app_can_authenticate(emulator: Emulator,
                                             session: aiohttp.ClientSession) -> None:
    em = emulator
    code = em.issue_manifest_code({"name": "Conveyor Lab", "default_events": ["push"],
                                   "default_permissions": {"contents": "read"}})
    async with session.post(em.base_url + f"/app-manifests/{code}/conversions") as resp:
        created = await resp.json()
    assert created["slug"] == "conveyor-lab" and created["webhook_secret"]
    async with session.post(em.base_url + f"/app-manifests/{code}/conversions") as resp:
        assert resp.status == 404
    now = int(time.time())
    token = jwt.encode({"iat": now - 30, "exp": now + 500, "iss": str(created["id"])},
                       created["pem"], algorithm="RS256")
    async with session.get(em.base_url + "/app",
                           headers={"Authorization": f"Bearer {token}"}) as resp:
        assert resp.status == 200


async def test_history_compare_and_web_url(emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    first = await em.push_files("acme/deploy", {"a.txt": "1\n"})
    await em.push_files("acme/deploy", {"b.txt": "1\n"})
    third = await em.push_files("acme/deploy", {"a.txt": "2\n"})
    history = [c["sha"] async for c in gh.getiter(R + "/commits?path=a.txt")]
    assert history == [third, first]
    side = await em.push_files("acme/deploy", {"c.txt": "1\n"}, branch="side")
    await em.push_files("acme/deploy", {"d.txt": "1\n"})
    cmp = await gh.getitem(R + f"/compare/main...{side}")
    assert (cmp["status"], cmp["ahead_by"], cmp["behind_by"]) == ("diverged", 1, 1)
    assert [f["filename"] for f in cmp["files"]] == ["c.txt"]
    em.web_url = "https://github.example"
    data = await gh.getitem(R)
    assert data["html_url"] == "https://github.example/acme/deploy"
    assert data["url"].startswith(em.base_url)
    assert em.file("acme/deploy", "a.txt", first) == "1\n"
    assert em.branches("acme/deploy") == ["main", "side"]


async def test_annotated_tag_push_and_release_lookup(emulator: Emulator, gh: GitHubAPI,
                                                     receiver: Receiver) -> None:
    em = emulator
    head = em.world.repo_by_name("acme/web").branch_sha("main")
    await em.create_tag("acme/web", "web-v1.4.2", annotated=True)
    await em.settle()
    push = receiver.events("push")[-1][1]
    assert push["ref"] == "refs/tags/web-v1.4.2" and push["head_commit"]["id"] == head
    commit = await gh.getitem("/repos/acme/web/commits/web-v1.4.2")
    assert commit["sha"] == head
    with pytest.raises(BadRequest) as err:
        await gh.getitem("/repos/acme/web/releases/tags/web-v1.4.2")
    assert err.value.status_code == 404
    await em.publish_release("acme/web", "web-v1.4.2", draft=True)
    with pytest.raises(BadRequest):
        await gh.getitem("/repos/acme/web/releases/tags/web-v1.4.2")
    assert em.violations == []


async def test_remaining_read_routes(emulator: Emulator, gh: GitHubAPI,
                                     session: aiohttp.ClientSession) -> None:
    em = emulator
    em.add_user("carol")
    em.add_repo("carol/tool", files={"a": "b\n"})
    inst = em.install("carol")
    carol_gh = GitHubAPI(session, "t", oauth_token=em.installation_token(inst),
                         base_url=em.base_url)
    digest = em.build_image("tool:0.1.0")
    version = await em.publish_container("carol", "tool", digest, ["0.1.0"],
                                         source_repo="carol/tool", emit=False)
    # no installation token reads package versions, not even the owner's (a GitHub App's
    # installation token is refused: enabledForGitHubApps: false)
    for client in (carol_gh, gh):
        with pytest.raises(BadRequest) as refused:
            await client.getitem(
                f"/users/carol/packages/container/tool/versions/{version['id']}")
        assert refused.value.status_code == 403
    em.violations.clear()

    await em.push_files("acme/deploy", {"x.txt": "x\n"}, branch="promo")
    pr = await em.open_pull("acme/deploy", "promo", title="P", author="alice")
    n = pr["number"]
    await gh.post(R + f"/issues/{n}/labels", data={"labels": ["conveyor"]})
    labels = [lab async for lab in gh.getiter(R + f"/issues/{n}/labels")]
    assert [lab["name"] for lab in labels] == ["conveyor"]
    comment = await em.comment("acme/deploy", n, "alice", "/status")
    await gh.post(R + f"/issues/comments/{comment['id']}/reactions", data={"content": "eyes"})
    reactions = [x async for x in gh.getiter(
        R + f"/issues/comments/{comment['id']}/reactions?content=eyes")]
    assert [x["user"]["login"] for x in reactions] == ["conveyor[bot]"]
    since = [c async for c in gh.getiter(R + f"/issues/{n}/comments?since=2000-01-01T00:00:00Z")]
    assert len(since) == 1
    with pytest.raises(BadRequest) as not_merged:
        await gh.getitem(R + f"/pulls/{n}/merge")
    assert not_merged.value.status_code == 404
    await em.merge_pull("acme/deploy", n, user="alice")
    async with session.get(em.base_url + R + f"/pulls/{n}/merge",
                           headers={"Authorization": f"token {gh.oauth_token}"}) as resp:
        assert resp.status == 204
    closed = [p async for p in gh.getiter(R + "/pulls?state=closed&base=main&sort=updated")]
    assert [p["number"] for p in closed] == [n]
    assert em.violations == []


async def test_token_permissions_are_enforced(emulator: Emulator,
                                              session: aiohttp.ClientSession) -> None:
    from .conftest import token_for

    em = emulator
    inst = em.install("acme")
    token = await token_for(em, session, inst, permissions={"contents": "read",
                                                             "metadata": "read"})
    gh = GitHubAPI(session, "t", oauth_token=token, base_url=em.base_url)
    assert (await gh.getitem(R + "/contents/README.md"))["path"] == "README.md"
    with pytest.raises(BadRequest) as err:
        await gh.post(R + "/issues", data={"title": "x"})
    assert err.value.status_code == 403
    assert "Resource not accessible by integration" in str(err.value)
    with pytest.raises(BadRequest) as write:
        await gh.put(R + "/contents/a.txt", data={"message": "m", "content": "eA=="})
    assert write.value.status_code == 403
    with pytest.raises(BadRequest) as escalate:
        await token_for(em, session, em.install("acme", ["web"],
                                                 permissions={"contents": "read"}),
                        permissions={"contents": "write"})
    assert escalate.value.status_code == 422
