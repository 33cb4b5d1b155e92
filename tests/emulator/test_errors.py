"""GitHub's error answers: status codes and `{"message", "documentation_url"}` bodies."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from conveyor_emulator import Emulator
from conveyor_emulator.driver.seeding import DEFAULT_PERMISSIONS

R = "/repos/acme/deploy"
SHA0 = "0" * 40

CASES: list[tuple[str, str, Any, int]] = [
    ("GET", "/nope", None, 404),
    ("GET", R + "/contents/missing.txt", None, 404),
    ("GET", R + "/contents/README.md?ref=nowhere", None, 404),
    ("PUT", R + "/contents/x.txt", {"content": "eA=="}, 422),
    ("PUT", R + "/contents/x.txt", {"message": "m"}, 422),
    ("PUT", R + "/contents/x.txt", {"message": "m", "content": "eA==", "sha": SHA0}, 422),
    ("PUT", R + "/contents/apps", {"message": "m", "content": "eA==", "sha": SHA0}, 422),
    ("PUT", R + "/contents/x.txt", {"message": "m", "content": "eA==", "branch": "nope"}, 404),
    ("GET", R + "/git/ref/heads/nope", None, 404),
    ("POST", R + "/git/refs", {"ref": "heads/x", "sha": SHA0}, 422),
    ("POST", R + "/git/refs", {"ref": "refs/heads/x", "sha": SHA0}, 422),
    ("POST", R + "/git/refs", {"ref": "refs/heads/main", "sha": "HEAD"}, 422),
    ("PATCH", R + "/git/refs/heads/nope", {"sha": SHA0}, 422),
    ("PATCH", R + "/git/refs/heads/main", {"sha": SHA0}, 422),
    ("DELETE", R + "/git/refs/heads/nope", None, 422),
    ("GET", R + f"/git/commits/{SHA0}", None, 404),
    ("POST", R + "/git/commits", {"tree": SHA0}, 422),
    ("POST", R + "/git/commits", {"tree": SHA0, "message": "m"}, 422),
    ("GET", R + f"/git/trees/{SHA0}", None, 404),
    ("POST", R + "/git/trees", {"tree": [{"path": "a", "mode": "100644", "type": "blob",
                                          "sha": SHA0}]}, 422),
    ("POST", R + "/git/trees", {"base_tree": SHA0, "tree": []}, 422),
    ("POST", R + "/git/trees", {"tree": [{"path": "a", "mode": "100644", "type": "blob",
                                          "sha": SHA0, "content": "both"}]}, 422),
    ("GET", R + f"/git/blobs/{SHA0}", None, 404),
    ("GET", R + f"/git/tags/{SHA0}", None, 404),
    ("GET", R + f"/commits/{SHA0}", None, 404),
    ("GET", R + "/commits?sha=nope", None, 404),
    ("GET", R + "/compare/main...nope", None, 404),
    ("GET", R + "/compare/main", None, 404),
    ("GET", R + "/branches/nope", None, 404),
    ("GET", R + "/pulls/999", None, 404),
    ("POST", R + "/pulls", {"title": "t", "head": "nope", "base": "main"}, 422),
    ("POST", R + "/pulls", {"title": "t", "head": "main", "base": "main"}, 422),
    ("POST", R + "/pulls", {"head": "main", "base": "main"}, 422),
    ("POST", R + "/pulls", {"title": "t", "head": "other:main", "base": "main"}, 422),
    ("GET", R + "/issues/999", None, 404),
    ("POST", R + "/issues", {"body": "no title"}, 422),
    ("GET", R + "/issues/comments/999", None, 404),
    ("GET", R + "/labels/nope", None, 404),
    ("POST", R + "/labels", {"color": "fff"}, 422),
    ("POST", R + "/check-runs", {"name": "x", "head_sha": SHA0}, 422),
    ("GET", R + "/check-runs/999", None, 404),
    ("POST", R + f"/statuses/{SHA0}", {"state": "success"}, 422),
    ("POST", R + "/deployments", {"ref": "nope"}, 422),
    ("GET", R + "/deployments/999", None, 404),
    ("GET", R + "/collaborators/nobody-here/permission", None, 404),
    ("GET", "/users/nobody-here", None, 404),
    ("GET", "/orgs/acme/teams/nope/memberships/alice", None, 404),
    ("GET", R + "/releases/999", None, 404),
    ("GET", R + "/releases/tags/v9", None, 404),
    # GitHub refuses every package read to installation tokens (enabledForGitHubApps: false)
    ("GET", "/orgs/acme/packages/container/nope/versions", None, 403),
    ("GET", "/orgs/acme/packages/npm/web/versions", None, 403),
    ("GET", R + "/attestations/sha256:" + "0" * 64, None, 404),
    ("GET", "/orgs/acme/attestations/sha256:" + "0" * 64, None, 404),
    ("GET", R + "/actions/runs/999", None, 404),
    ("POST", "/app-manifests/unknown/conversions", None, 404),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), CASES,
                         ids=[f"{m} {p} {s}" for m, p, _, s in CASES])
async def test_error_answers(emulator: Emulator, session: aiohttp.ClientSession, method: str,
                             path: str, body: Any, status: int) -> None:
    em = emulator
    # a CI app's permissions: it may write commit statuses, which Conveyor only reads
    token = em.installation_token(em.install(
        "acme", permissions={**DEFAULT_PERMISSIONS, "statuses": "write"}))
    em.add_user("alice")
    async with session.request(method, em.base_url + path, json=body,
                               headers={"Authorization": f"token {token}"}) as resp:
        assert resp.status == status, await resp.text()
        data = await resp.json()
    assert isinstance(data["message"], str) and data["documentation_url"].startswith("https://")
    assert "x-ratelimit-remaining" in resp.headers
    # the requests above are wrong on purpose; the answers must still be GitHub's
    assert [v for v in em.violations if " request: " not in v
            and "not in GitHub's REST description" not in v
            and "enabledForGitHubApps: false" not in v] == []


async def test_bad_json_and_no_auth(emulator: Emulator, session: aiohttp.ClientSession) -> None:
    em = emulator
    token = em.installation_token(em.install("acme"))
    async with session.post(em.base_url + R + "/issues", data=b"{not json",
                            headers={"Authorization": f"token {token}"}) as resp:
        assert resp.status == 400
        assert (await resp.json())["message"] == "Problems parsing JSON"
    async with session.get(em.base_url + "/app") as resp:
        assert resp.status == 401
