"""The `/_emulator/` control API, and webhook kinds not covered elsewhere (schema-checked)."""

from __future__ import annotations

import aiohttp
from gidgethub.aiohttp import GitHubAPI

from conveyor_emulator import Emulator

from .conftest import Receiver

R = "/repos/acme/deploy"


async def test_control_api(emulator: Emulator, gh: GitHubAPI, session: aiohttp.ClientSession,
                           receiver: Receiver) -> None:
    em = emulator
    base = em.web_url + "/_emulator"
    async with session.patch(base + "/faults", json={"latency": 0.01, "error_rate": 0}) as resp:
        assert resp.status == 200
        assert (await resp.json())["latency"] == 0.01
    async with session.patch(base + "/faults", json={"nope": 1}) as resp:
        assert resp.status == 400
    await gh.getitem(R)
    async with session.get(base + "/requests",
                           params={"method": "GET", "path": "/repos/{owner}/{repo}"}) as resp:
        counts = await resp.json()
    assert counts["count"] == 1 and counts["total"] >= 2
    async with session.post(base + "/act/push_files", json={
            "repo": "acme/deploy", "files": {"x.txt": "x\n"}, "branch": "promo"}) as resp:
        assert resp.status == 200
    async with session.post(base + "/act/open_pull", json={
            "repo": "acme/deploy", "head": "promo", "title": "P", "author": "alice"}) as resp:
        number = (await resp.json())["result"]["number"]
    async with session.post(base + "/act/comment", json={
            "repo": "acme/deploy", "number": number, "user": "alice", "body": "/hold"}) as resp:
        assert resp.status == 200
    async with session.post(base + "/act/review", json={
            "repo": "acme/deploy", "number": number, "user": "bob", "state": "APPROVE"}) as resp:
        assert resp.status == 200
    async with session.post(base + "/act/merge_pull", json={
            "repo": "acme/deploy", "number": number, "user": "alice"}) as resp:
        assert (await resp.json())["result"]["merged"] is True
    async with session.post(base + "/act/merge_pull", json={
            "repo": "acme/deploy", "number": number, "user": "alice"}) as resp:
        assert resp.status == 405
    async with session.post(base + "/act/publish_release", json={
            "repo": "acme/web", "tag": "v2.0.0"}) as resp:
        assert (await resp.json())["result"]["tag_name"] == "v2.0.0"
    async with session.post(base + "/seed/build_image", json={"text": "web:2.0.0"}) as resp:
        built = (await resp.json())["result"]
    async with session.post(base + "/act/publish_container", json={
            "owner": "acme", "package": "web", "digest": built,
            "tags": ["2.0.0"], "source_repo": "acme/web"}) as resp:
        assert resp.status == 200
    async with session.post(base + "/act/create_deployment", json={
            "repo": "acme/deploy", "sha": "main", "environment": "staging"}) as resp:
        dep = (await resp.json())["result"]
    async with session.post(base + "/act/set_deployment_status", json={
            "repo": "acme/deploy", "deployment_id": dep["id"], "state": "inactive"}) as resp:
        assert resp.status == 200
    async with session.post(base + "/act/drop_database", json={}) as resp:
        assert resp.status == 404
    async with session.get(base + "/state/comments",
                           params={"repo": "acme/deploy", "number": str(number)}) as resp:
        assert (await resp.json())["result"][0]["body"] == "/hold"
    async with session.post(base + "/settle") as resp:
        assert resp.status == 200
    async with session.get(base + "/violations") as resp:
        assert (await resp.json())["violations"] == []
    async with session.get(base + "/deliveries") as resp:
        events = {d["event"] for d in await resp.json()}
    assert {"push", "pull_request", "issue_comment", "pull_request_review", "release",
            "registry_package", "package", "deployment", "deployment_status"} <= events
    async with session.post(base + "/requests/reset") as resp:
        assert resp.status == 200
    assert em.requests.count() == 0


async def test_more_webhook_kinds(emulator: Emulator, gh: GitHubAPI,
                                  receiver: Receiver) -> None:
    em = emulator
    await em.push_files("acme/deploy", {"x.txt": "1\n"}, branch="promo")
    pr = await gh.post(R + "/pulls", data={"title": "P", "head": "promo", "base": "main"})
    n = pr["number"]
    await gh.patch(R + f"/pulls/{n}", data={"title": "P2", "body": "b"})
    await gh.post(R + f"/issues/{n}/labels", data={"labels": ["conveyor/hold"]})
    await gh.delete(R + f"/issues/{n}/labels/conveyor%2Fhold")
    await em.push_files("acme/deploy", {"x.txt": "2\n"}, branch="promo")
    await gh.patch(R + f"/pulls/{n}", data={"state": "closed"})
    await gh.patch(R + f"/pulls/{n}", data={"state": "open"})
    comment = await em.comment("acme/deploy", n, "alice", "/recheck")
    await em.edit_comment("acme/deploy", comment["id"], "/recheck please", user="alice")
    issue = await gh.post(R + "/issues", data={"title": "Dashboard"})
    await gh.patch(R + f"/issues/{issue['number']}", data={"title": "Dash", "state": "closed"})
    await gh.patch(R + f"/issues/{issue['number']}", data={"state": "open"})
    run = await gh.post(R + "/check-runs", data={
        "name": "gate", "head_sha": (await gh.getitem(R + f"/pulls/{n}"))["head"]["sha"],
        "status": "completed", "conclusion": "failure",
        "output": {"title": "no", "summary": "missing evidence"}})
    assert run["status"] == "completed"
    await em.open_issue("acme/deploy", "From a person", author="bob", labels=["bug"])
    inst = next(iter(em.world.installations))
    em.add_repo("acme/late", files={"a": "b"})
    await em.add_installation_repos(inst, ["acme/late"])
    await em.settle()
    kinds = {(e, p.get("action")) for e, p in receiver.events()}
    for expected in [("pull_request", "edited"), ("pull_request", "labeled"),
                     ("pull_request", "unlabeled"), ("pull_request", "synchronize"),
                     ("pull_request", "closed"), ("pull_request", "reopened"),
                     ("issue_comment", "edited"), ("issues", "opened"), ("issues", "edited"),
                     ("issues", "closed"), ("issues", "reopened"),
                     ("check_run", "completed"), ("installation_repositories", "added")]:
        assert expected in kinds, expected
    sync = next(p for e, p in receiver.events("pull_request") if p["action"] == "synchronize")
    assert sync["before"] != sync["after"]
    assert em.violations == []
