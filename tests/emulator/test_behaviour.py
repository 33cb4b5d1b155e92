"""GitHub behaviours the bot relies on: pagination, ETags, merges, auth, scope, webhooks."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from typing import Any

import aiohttp
import pytest
from gidgethub import BadRequest, GitHubBroken, RateLimitExceeded
from gidgethub.aiohttp import GitHubAPI
from multidict import CIMultiDict

from conveyor_emulator import Emulator

from .conftest import SECRET, Receiver, app_jwt, token_for

R = "/repos/acme/deploy"
KUSTOMIZATION = "apps/web/overlays/staging/kustomization.yaml"


async def raw(session: aiohttp.ClientSession, method: str, url: str, token: str | None = None,
              **kw: Any) -> tuple[int, CIMultiDict[str], Any]:
    headers = dict(kw.pop("headers", {}))
    if token:
        headers["Authorization"] = f"token {token}"
    async with session.request(method, url, headers=headers, **kw) as resp:
        body = await resp.json() if resp.content_type == "application/json" else None
        return resp.status, CIMultiDict(resp.headers), body


async def branch_with(em: Emulator, branch: str, files: dict[str, str | None]) -> str:
    return await em.push_files("acme/deploy", files, branch=branch, message=f"on {branch}")


# -- pagination and conditional requests ------------------------------------------------------

async def test_link_pagination_honours_per_page(emulator: Emulator, gh: GitHubAPI,
                                                session: aiohttp.ClientSession) -> None:
    for i in range(35):
        await gh.post(R + "/labels", data={"name": f"label-{i:02d}"})
    token = gh.oauth_token
    status, headers, body = await raw(session, "GET", emulator.base_url + R + "/labels", token)
    assert status == 200 and len(body) == 30
    assert 'rel="next"' in headers["Link"] and "page=2" in headers["Link"]
    assert 'rel="last"' in headers["Link"]
    _, headers2, body2 = await raw(session, "GET", emulator.base_url + R + "/labels?page=2",
                                   token)
    assert len(body2) == 5 and 'rel="prev"' in headers2["Link"]
    _, _, capped = await raw(session, "GET", emulator.base_url + R + "/labels?per_page=500",
                             token)
    assert len(capped) == 35
    _, headers3, small = await raw(session, "GET",
                                   emulator.base_url + R + "/labels?per_page=10&page=4", token)
    assert len(small) == 5 and 'rel="next"' not in headers3["Link"]
    everything = [x async for x in gh.getiter(R + "/labels?per_page=7")]
    assert len(everything) == 35
    assert emulator.violations == []


async def test_etag_304_does_not_spend_rate_limit(emulator: Emulator, gh: GitHubAPI,
                                                  session: aiohttp.ClientSession) -> None:
    url = emulator.base_url + R + "/pulls"
    token = gh.oauth_token
    status, headers, _ = await raw(session, "GET", url, token)
    assert status == 200 and headers["ETag"].startswith('W/"')
    remaining = int(headers["x-ratelimit-remaining"])
    assert headers["x-ratelimit-limit"] == "5000" and headers["x-ratelimit-resource"] == "core"
    status, headers2, body = await raw(session, "GET", url, token,
                                       headers={"If-None-Match": headers["ETag"]})
    assert status == 304 and body is None
    assert int(headers2["x-ratelimit-remaining"]) == remaining
    await emulator.push_files("acme/deploy", {"x.txt": "1\n"}, branch="feature")
    await emulator.open_pull("acme/deploy", "feature", title="Feature", author="alice")
    status, headers3, _ = await raw(session, "GET", url, token,
                                    headers={"If-None-Match": headers["ETag"]})
    assert status == 200 and int(headers3["x-ratelimit-remaining"]) == remaining - 1
    assert emulator.requests.count("GET", "/repos/{owner}/{repo}/pulls") == 3
    assert sum(1 for e in emulator.requests.entries if e.was_304) == 1


async def test_gidgethub_cache_gets_304s(emulator: Emulator, session: aiohttp.ClientSession
                                         ) -> None:
    inst = emulator.install("acme")
    token = await token_for(emulator, session, inst)
    cache: dict[Any, Any] = {}
    gh = GitHubAPI(session, "t", oauth_token=token, base_url=emulator.base_url, cache=cache)
    first = await gh.getitem(R + "/contents/README.md")
    second = await gh.getitem(R + "/contents/README.md")
    assert first == second
    assert emulator.requests.count(status=304) == 1


# -- merges ------------------------------------------------------------------------------------

async def test_merge_sha_guard_and_squash_content(emulator: Emulator, gh: GitHubAPI,
                                                  receiver: Receiver) -> None:
    em = emulator
    await branch_with(em, "promo", {KUSTOMIZATION: "images:\n- name: web\n  newTag: 1.1.0\n"})
    await branch_with(em, "promo", {"extra.txt": "two\n"})
    pr = await gh.post(R + "/pulls", data={"title": "Promote", "head": "promo", "base": "main"})
    with pytest.raises(BadRequest) as err:
        await gh.put(R + f"/pulls/{pr['number']}/merge", data={"sha": "0" * 40})
    assert err.value.status_code == 409 and "Head branch was modified" in str(err.value)
    base_before = em.world.repo_by_name("acme/deploy").branch_sha("main")
    merged = await gh.put(R + f"/pulls/{pr['number']}/merge",
                          data={"sha": pr["head"]["sha"], "merge_method": "squash"})
    commit = await gh.getitem(R + f"/commits/{merged['sha']}")
    assert [p["sha"] for p in commit["parents"]] == [base_before]
    assert commit["commit"]["message"].startswith(f"Promote (#{pr['number']})")
    assert commit["commit"]["verification"]["verified"] is True
    assert commit["commit"]["committer"]["name"] == "GitHub"
    assert {f["filename"] for f in commit["files"]} == {KUSTOMIZATION, "extra.txt"}
    assert em.file("acme/deploy", KUSTOMIZATION) == "images:\n- name: web\n  newTag: 1.1.0\n"
    after = await gh.getitem(R + f"/pulls/{pr['number']}")
    assert after["merged"] is True and after["merge_commit_sha"] == merged["sha"]
    assert after["state"] == "closed"
    with pytest.raises(BadRequest) as again:
        await gh.put(R + f"/pulls/{pr['number']}/merge", data={})
    assert again.value.status_code == 405
    await em.settle()
    events = [(e, p.get("action")) for e, p in receiver.events()]
    assert ("push", None) in events and ("pull_request", "closed") in events
    closed = next(p for e, p in receiver.events("pull_request") if p["action"] == "closed")
    assert closed["pull_request"]["merged"] is True
    assert closed["sender"]["login"] == "conveyor[bot]" and closed["sender"]["type"] == "Bot"
    assert em.violations == []


async def test_a_squash_merge_is_authored_by_whoever_merges_with_githubs_default_message(
        emulator: Emulator) -> None:
    """One commit: its title with the PR's number, then its body (trailers included); the
    author is the merger, not the PR's author (the merge box offers the merger's addresses)."""
    em = emulator
    await em.push_files("acme/deploy", {"one.txt": "1\n"}, branch="one", author="alice",
                        message="Promote web 1.1.0\n\nWhy it moves.\n\nTrailer: kept")
    one = await em.open_pull("acme/deploy", "one", title="The PR's own title", author="alice")
    await em.merge_pull("acme/deploy", one["number"], user="dave")
    squashed = em.commit("acme/deploy", "main")
    assert squashed["commit"]["message"] == (
        f"Promote web 1.1.0 (#{one['number']})\n\nWhy it moves.\n\nTrailer: kept")
    assert squashed["author"]["login"] == "dave"
    assert squashed["commit"]["committer"]["name"] == "GitHub"
    await em.push_files("acme/deploy", {"a.txt": "a\n"}, branch="two", message="first")
    await em.push_files("acme/deploy", {"b.txt": "b\n"}, branch="two", message="second")
    two = await em.open_pull("acme/deploy", "two", title="Two commits", author="alice")
    await em.merge_pull("acme/deploy", two["number"], user="bob")
    assert em.commit("acme/deploy", "main")["commit"]["message"] == (
        f"Two commits (#{two['number']})\n\n* first\n\n* second")
    assert em.violations == []


async def test_pulls_are_listed_newest_first_unless_sorted_otherwise(
        emulator: Emulator, gh: GitHubAPI) -> None:
    """"List pull requests": `direction` defaults to `desc` when `sort` is `created` or not
    given, otherwise to `asc`."""
    em = emulator
    numbers = []
    for name in ("one", "two", "three"):
        await em.push_files("acme/deploy", {f"{name}.txt": "x\n"}, branch=name, message=name)
        numbers.append((await em.open_pull("acme/deploy", name, title=name,
                                           author="alice"))["number"])
    listed = [pr["number"] for pr in await gh.getitem(f"{R}/pulls")]
    assert listed == numbers[::-1]
    by_update = [pr["number"] for pr in await gh.getitem(f"{R}/pulls?sort=updated")]
    assert by_update == numbers
    assert em.violations == []


async def test_merge_commit_and_rebase(emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    await branch_with(em, "a", {"a.txt": "a\n"})
    await branch_with(em, "b", {"b.txt": "b\n"})
    pa = await em.open_pull("acme/deploy", "a", title="A", author="alice")
    pb = await em.open_pull("acme/deploy", "b", title="B", author="alice")
    merged = await gh.put(R + f"/pulls/{pa['number']}/merge", data={"merge_method": "merge"})
    commit = await gh.getitem(R + f"/commits/{merged['sha']}")
    assert len(commit["parents"]) == 2
    assert commit["commit"]["message"].startswith(f"Merge pull request #{pa['number']}")
    rebased = await gh.put(R + f"/pulls/{pb['number']}/merge", data={"merge_method": "rebase"})
    commit_b = await gh.getitem(R + f"/commits/{rebased['sha']}")
    assert commit_b["parents"][0]["sha"] == merged["sha"]
    assert commit_b["commit"]["message"] == "on b"
    assert em.file("acme/deploy", "a.txt") == "a\n" and em.file("acme/deploy", "b.txt") == "b\n"


async def test_conflict_makes_pull_unmergeable(emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    await branch_with(em, "promo", {KUSTOMIZATION: "images:\n- name: web\n  newTag: 2.0.0\n"})
    pr = await em.open_pull("acme/deploy", "promo", title="Promote", author="alice")
    await em.push_files("acme/deploy", {KUSTOMIZATION: "images:\n- name: web\n  newTag: 9\n"})
    data = await gh.getitem(R + f"/pulls/{pr['number']}")
    assert data["mergeable"] is False and data["mergeable_state"] == "dirty"
    with pytest.raises(BadRequest) as err:
        await gh.put(R + f"/pulls/{pr['number']}/merge", data={"merge_method": "squash"})
    assert err.value.status_code == 405


async def test_required_checks_block_merge(emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    em.set_required_checks("acme/deploy", ["conveyor/promotion-gate"])
    await branch_with(em, "promo", {"x.txt": "x\n"})
    pr = await em.open_pull("acme/deploy", "promo", title="P", author="alice")
    data = await gh.getitem(R + f"/pulls/{pr['number']}")
    assert data["mergeable_state"] == "blocked"
    with pytest.raises(BadRequest) as err:
        await gh.put(R + f"/pulls/{pr['number']}/merge", data={})
    assert err.value.status_code == 405
    await gh.post(R + "/check-runs", data={"name": "conveyor/promotion-gate",
                                           "head_sha": pr["head"]["sha"],
                                           "conclusion": "success",
                                           "output": {"title": "ok", "summary": "ok"}})
    assert (await gh.getitem(R + f"/pulls/{pr['number']}"))["mergeable_state"] == "clean"
    await gh.put(R + f"/pulls/{pr['number']}/merge", data={})


async def test_duplicate_pull_is_422(emulator: Emulator, gh: GitHubAPI) -> None:
    await branch_with(emulator, "promo", {"x.txt": "x\n"})
    await gh.post(R + "/pulls", data={"title": "P", "head": "promo", "base": "main"})
    with pytest.raises(BadRequest) as err:
        await gh.post(R + "/pulls", data={"title": "P", "head": "acme:promo", "base": "main"})
    assert err.value.status_code == 422
    assert "A pull request already exists for acme:promo." in str(err.value.errors)


async def test_contents_put_sha_mismatch(emulator: Emulator, gh: GitHubAPI) -> None:
    content = base64.b64encode(b"new\n").decode()
    with pytest.raises(BadRequest) as err:
        await gh.put(R + "/contents/README.md", data={"message": "m", "content": content,
                                                      "sha": "1" * 40})
    assert err.value.status_code == 409
    with pytest.raises(BadRequest) as missing:
        await gh.put(R + "/contents/README.md", data={"message": "m", "content": content})
    assert missing.value.status_code == 422
    created = await gh.put(R + "/contents/new/file.txt", data={
        "message": "add", "content": content, "branch": "main"})
    assert created["content"]["path"] == "new/file.txt"
    with pytest.raises(BadRequest) as gone:
        await gh.getitem(R + "/contents/nope.txt")
    assert gone.value.status_code == 404


# -- authentication and scope ------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["wrong-key", "expired", "wrong-iss", "too-long", "future",
                                  "garbage", "hs256"])
async def test_bad_jwts_are_rejected(emulator: Emulator, session: aiohttp.ClientSession,
                                     kind: str) -> None:
    import jwt as pyjwt

    from conveyor_emulator.apps.auth import generate_private_key

    em = emulator
    now = int(time.time())
    token = {
        "wrong-key": lambda: app_jwt(em, key=generate_private_key()[0]),
        "expired": lambda: app_jwt(em, iat_offset=-700, exp_offset=-100),
        "wrong-iss": lambda: app_jwt(em, iss="999"),
        "too-long": lambda: app_jwt(em, exp_offset=3600),
        "future": lambda: app_jwt(em, iat_offset=300, exp_offset=600),
        "garbage": lambda: "a.b.c",
        "hs256": lambda: pyjwt.encode({"iat": now, "exp": now + 60, "iss": "1"}, "k" * 32,
                                      algorithm="HS256"),
    }[kind]()
    status, _, body = await raw(session, "GET", em.base_url + "/app",
                                headers={"Authorization": f"Bearer {token}"})
    assert status == 401 and body["message"]


async def test_tokens_and_jwts_are_not_interchangeable(emulator: Emulator, gh: GitHubAPI,
                                                       session: aiohttp.ClientSession) -> None:
    em = emulator
    status, _, _ = await raw(session, "GET", em.base_url + "/app", gh.oauth_token)
    assert status == 401
    status, _, _ = await raw(session, "GET", em.base_url + R,
                             headers={"Authorization": f"Bearer {app_jwt(em)}"})
    assert status == 401
    status, _, body = await raw(session, "GET", em.base_url + R, "ghs_unknown")
    assert status == 401 and body["message"] == "Bad credentials"
    status, _, _ = await raw(session, "GET", em.base_url + R)
    assert status == 401


async def test_token_scope_and_expiry(emulator: Emulator, session: aiohttp.ClientSession
                                      ) -> None:
    em = emulator
    em.add_org("other-org")
    em.add_repo("other-org/secret", files={"a": "b"})
    inst = em.install("acme", ["deploy", "web"])
    scoped = await token_for(em, session, inst, repositories=["deploy"])
    assert (await raw(session, "GET", em.base_url + R, scoped))[0] == 200
    assert (await raw(session, "GET", em.base_url + "/repos/acme/web", scoped))[0] == 404
    broad = await token_for(em, session, inst)
    assert (await raw(session, "GET", em.base_url + "/repos/acme/web", broad))[0] == 200
    assert (await raw(session, "GET", em.base_url + "/repos/acme/other", broad))[0] == 404
    assert (await raw(session, "GET", em.base_url + "/repos/other-org/secret", broad))[0] == 404
    _, _, body = await raw(session, "GET", em.base_url + "/installation/repositories",
                           scoped)
    assert [r["name"] for r in body["repositories"]] == ["deploy"]
    with pytest.raises(BadRequest) as err:
        await token_for(em, session, inst, repositories=["other"])
    assert err.value.status_code == 422
    em.token_ttl = 0.05
    short = await token_for(em, session, inst)
    await __import__("asyncio").sleep(0.1)
    assert (await raw(session, "GET", em.base_url + R, short))[0] == 401
    assert em.violations == []


# -- webhooks ----------------------------------------------------------------------------------

async def test_webhooks_are_signed_and_shaped(emulator: Emulator, gh: GitHubAPI,
                                              receiver: Receiver) -> None:
    em = emulator
    await em.push_files("acme/deploy", {"x.txt": "1\n"}, branch="feature", author="alice")
    pr = await gh.post(R + "/pulls", data={"title": "F", "head": "feature", "base": "main"})
    await em.comment("acme/deploy", pr["number"], "alice", "/promote production")
    await em.settle()
    assert receiver.received
    for headers, payload, body in receiver.received:
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-Hub-Signature-256"] == expected
        assert headers["User-Agent"].startswith("GitHub-Hookshot/")
        assert headers["X-GitHub-Hook-Installation-Target-Type"] == "integration"
        assert headers["X-GitHub-Hook-Installation-Target-ID"] == str(em.app_id)
        assert len(headers["X-GitHub-Delivery"]) == 36
        assert payload["installation"]["id"] in em.world.installations
        assert payload["repository"]["full_name"] == "acme/deploy"
        assert payload["organization"]["login"] == "acme"
        # GitHub writes `action` first (every example of @octokit/webhooks-examples that has
        # one): receivers may route on it without parsing the body
        assert "action" not in payload or body.startswith(b'{"action":'), body[:80]
    kinds = [(e, p.get("action")) for e, p in receiver.events()]
    assert ("push", None) in kinds
    assert ("pull_request", "opened") in kinds
    assert ("issue_comment", "created") in kinds
    opened = next(p for e, p in receiver.events("pull_request") if p["action"] == "opened")
    assert opened["sender"]["login"] == "conveyor[bot]"
    push = next(p for e, p in receiver.events("push"))
    assert push["commits"][0]["added"] == ["x.txt"] and push["ref"] == "refs/heads/feature"
    assert push["sender"]["login"] == "alice"
    comment = next(p for e, p in receiver.events("issue_comment"))
    assert comment["issue"]["pull_request"]["url"].endswith(f"/pulls/{pr['number']}")
    assert [d.status_code for d in em.deliveries] == [202] * len(em.deliveries)
    assert em.violations == []


async def test_redelivery_keeps_guid(emulator: Emulator, gh: GitHubAPI,
                                     receiver: Receiver) -> None:
    em = emulator
    await em.push_files("acme/deploy", {"x.txt": "1\n"})
    first = em.deliveries[0]
    status = await em.redeliver(first.id)
    assert status == 202
    again = em.deliveries[-1]
    assert again.redelivery is True and again.guid == first.guid
    assert receiver.received[-1][0]["X-GitHub-Delivery"] == first.guid


async def test_events_from_acting_helpers(emulator: Emulator, gh: GitHubAPI,
                                          receiver: Receiver) -> None:
    em = emulator
    await em.create_tag("acme/web", "v1.0.0")
    await em.publish_release("acme/web", "v1.0.0")
    await em.publish_release("acme/web", "v1.1.0-rc.1", prerelease=True)
    await em.publish_container("acme", "web", em.build_image("web:1.0.0"), ["1.0.0"],
                               source_repo="acme/web")
    head = em.world.repo_by_name("acme/deploy").branch_sha("main")
    assert head is not None
    dep = await em.create_deployment("acme/deploy", head, "staging")
    await em.set_status("acme/deploy", head, "argocd/staging", "success")
    await branch_with(em, "promo", {"x.txt": "x\n"})
    pr = await em.open_pull("acme/deploy", "promo", title="P", author="alice")
    review = await em.review("acme/deploy", pr["number"], "bob", "APPROVE")
    await em.dismiss_review("acme/deploy", pr["number"], review["id"], user="alice")
    run = await gh.post(R + "/check-runs", data={"name": "gate", "head_sha": pr["head"]["sha"]})
    await em.rerequest_check_run("acme/deploy", run["id"], user="alice")
    await em.request_check_run_action("acme/deploy", run["id"], "recheck", user="alice")
    await em.rerequest_check_suite("acme/deploy", pr["head"]["sha"], user="alice")
    await em.merge_group("acme/deploy", pr["number"])
    inst = next(iter(em.world.installations))
    await em.notify_installation(inst)
    await em.settle()
    kinds = [(e, p.get("action")) for e, p in receiver.events()]
    releases = [a for e, a in kinds if e == "release"]
    assert releases == ["created", "published", "released", "created", "published",
                        "prereleased"]
    packages = [p for e, p in receiver.events("registry_package")]
    assert [p["registry_package"]["package_version"]["container_metadata"]["tag"]["name"]
            for p in packages] == ["", "", "1.0.0"]
    assert len(receiver.events("package")) == 3
    for event in ("deployment", "deployment_status", "status", "check_run", "check_suite",
                  "pull_request_review", "merge_group", "installation"):
        assert receiver.events(event), event
    assert dep["environment"] == "staging"
    actions = [p["action"] for _, p in receiver.events("check_run")]
    assert actions == ["created", "rerequested", "requested_action"]
    assert em.violations == []


# -- faults ------------------------------------------------------------------------------------

async def test_faults(emulator: Emulator, gh: GitHubAPI, session: aiohttp.ClientSession
                      ) -> None:
    em = emulator
    token = gh.oauth_token
    url = em.base_url + R
    em.faults.error_rate = 1.0
    assert (await raw(session, "GET", url, token))[0] == 502
    with pytest.raises(GitHubBroken):
        await gh.getitem(R)
    em.faults.error_rate = 0.0
    em.faults.secondary_rate_limit_rate = 1.0
    em.faults.retry_after = 7
    status, headers, body = await raw(session, "GET", url, token)
    assert status == 403 and headers["Retry-After"] == "7"
    assert "secondary rate limit" in body["message"]
    em.faults.secondary_rate_limit_rate = 0.0
    # inside the window every request of the installation is refused again, and recorded
    status, headers, _ = await raw(session, "GET", url, token)
    assert status == 403 and 0 < int(headers["Retry-After"]) <= 7
    assert len(em.secondary.inside) == 1
    em.secondary.reset()
    em.faults.bare_secondary_rate = 1.0
    status, headers, body = await raw(session, "GET", url, token)
    assert status == 403 and "Retry-After" not in headers
    assert headers["x-ratelimit-remaining"] != "0"  # neither header: wait a minute
    assert [round(end - start) for _key, start, end in em.secondary.opened] == [60]
    em.faults.bare_secondary_rate = 0.0
    em.secondary.reset()
    em.faults.rate_limit_exhausted = True
    status, headers, body = await raw(session, "GET", url, token)
    assert status == 403 and headers["x-ratelimit-remaining"] == "0"
    assert int(headers["x-ratelimit-reset"]) > time.time()
    with pytest.raises(RateLimitExceeded):
        await gh.getitem(R)
    em.faults.rate_limit_exhausted = False
    em.faults.latency = 0.05
    started = time.monotonic()
    assert (await raw(session, "GET", url, token))[0] == 200
    assert time.monotonic() - started >= 0.05
    em.faults.latency = 0.0
    em.faults.timeout_rate = 1.0
    em.faults.timeout_seconds = 0.5
    with pytest.raises(TimeoutError):
        await raw(session, "GET", url, token, timeout=aiohttp.ClientTimeout(total=0.1))
    em.faults.timeout_rate = 0.0
    assert em.requests.count(status=502) == 2


async def test_a_request_on_its_way_before_a_window_opened_is_not_counted_inside_it(
        emulator: Emulator, gh: GitHubAPI, session: aiohttp.ClientSession) -> None:
    """A slow answer (a fault) keeps a request in the emulator while another one opens a
    secondary-limit window: it is refused, but it was sent before anyone could know of the
    window, so only requests that arrive after it opened count as sent inside it."""
    em = emulator
    token = gh.oauth_token
    url = em.base_url + R
    em.faults.timeout_rate, em.faults.timeout_seconds = 1.0, 0.3
    slow = asyncio.ensure_future(raw(session, "GET", url, token))
    await asyncio.sleep(0.1)
    em.faults.timeout_rate, em.faults.secondary_rate_limit_rate = 0.0, 1.0
    assert (await raw(session, "GET", url, token))[0] == 403  # opens the window
    em.faults.secondary_rate_limit_rate = 0.0
    assert (await slow)[0] == 403
    assert em.secondary.inside == []
    assert (await raw(session, "GET", url, token))[0] == 403
    assert [hit.method for hit in em.secondary.inside] == ["GET"]
    assert em.injected["slow answer"] == 1


async def test_a_stall_of_the_served_loop_is_recorded(emulator: Emulator) -> None:
    """While the emulator's loop is blocked it stamps no arrival: the stall is recorded on
    the rate-limit timer, so that a check can tell the emulator's lateness from a bot's."""
    await asyncio.sleep(0.05)
    before = time.time()
    time.sleep(0.2)  # noqa: ASYNC251 - the stall under test
    await asyncio.sleep(0.05)
    stalled = emulator.stalls.within(before, time.time())
    assert 0.15 < stalled <= 0.25
    assert emulator.stalls.within(before - 10, before - 5) == 0.0


async def test_fault_rolls_are_deterministic(receiver: Receiver,
                                             session: aiohttp.ClientSession) -> None:
    outcomes = []
    for _ in range(2):
        em = Emulator(webhook_secret=SECRET, seed=42)
        await em.start()
        em.add_org("acme")
        em.add_repo("acme/deploy", files={"a": "b"})
        token = em.installation_token(em.install("acme"))
        em.faults.error_rate = 0.5
        statuses = [(await raw(session, "GET", em.base_url + R, token))[0] for _ in range(20)]
        outcomes.append(statuses)
        await em.stop()
    assert outcomes[0] == outcomes[1] and 502 in outcomes[0] and 200 in outcomes[0]


async def test_primary_rate_limit_counts_down(emulator: Emulator, gh: GitHubAPI,
                                              session: aiohttp.ClientSession) -> None:
    emulator.rate_limits.limit = 3
    token = gh.oauth_token
    seen = [(await raw(session, "GET", emulator.base_url + R, token))[0] for _ in range(4)]
    # the token request itself was counted against the app, not the installation
    assert seen == [200, 200, 200, 403]


async def test_content_creation_limit(emulator: Emulator, gh: GitHubAPI,
                                      session: aiohttp.ClientSession) -> None:
    """GitHub's secondary limit on content creation: 80 a minute (here lowered to 3)."""
    em = emulator
    em.faults.content_per_minute = 3
    issue = await gh.post(R + "/issues", data={"title": "limits"})
    for i in range(2):
        await gh.post(R + f"/issues/{issue['number']}/comments", data={"body": str(i)})
    status, headers, body = await raw(session, "POST", em.base_url + R + "/issues", gh.oauth_token)
    assert status == 403 and int(headers["Retry-After"]) == 60
    assert "secondary rate limit" in body["message"]
    # reads of the same installation are refused as well until the window ends
    assert (await raw(session, "GET", em.base_url + R, gh.oauth_token))[0] == 403


async def test_a_server_without_rate_limits_counts_none(session: aiohttp.ClientSession) -> None:
    """A GitHub Enterprise Server whose administrator left rate limits off (their default)
    serves content creation past 80 a minute and every request past the primary limit; the
    random faults still answer as faults."""
    em = Emulator(webhook_secret=SECRET, seed=3, rate_limiting=False)
    await em.start()
    try:
        em.add_org("acme")
        em.add_repo("acme/deploy", files={"a": "b"})
        token = em.installation_token(em.install("acme"))
        em.faults.content_per_minute = 3
        em.rate_limits.limit = 3
        url = em.base_url + R
        status, headers, issue = await raw(session, "POST", url + "/issues", token,
                                           json={"title": "no limits"})
        assert status == 201
        assert not [name for name in headers if name.lower().startswith("x-ratelimit-")]
        for i in range(5):
            status, _h, _b = await raw(session, "POST", url + f"/issues/{issue['number']}"
                                       "/comments", token, json={"body": str(i)})
            assert status == 201
        assert em.secondary.opened == []
        em.faults.secondary_rate_limit_rate = 1.0
        assert (await raw(session, "GET", url, token))[0] == 403
    finally:
        await em.stop()


async def test_texts_over_githubs_limits_are_refused(emulator: Emulator, gh: GitHubAPI,
                                                    session: aiohttp.ClientSession) -> None:
    em = emulator
    url = em.base_url + R
    issue = await gh.post(R + "/issues", data={"title": "limits", "body": "x" * 65_536})
    status, _headers, body = await raw(session, "POST", url + f"/issues/{issue['number']}"
                                       "/comments", gh.oauth_token, json={"body": "x" * 65_537})
    assert status == 422
    assert body["errors"][0]["message"] == "body is too long (maximum is 65536 characters)"
    status, _h, _b = await raw(session, "PATCH", url + f"/issues/{issue['number']}",
                               gh.oauth_token, json={"body": "y" * 65_537})
    assert status == 422
    head = em.world.repo_by_name("acme/deploy").branch_sha("main")
    run = {"name": "c", "head_sha": head, "output": {"title": "t", "summary": "s" * 65_535}}
    assert (await gh.post(R + "/check-runs", data=run))["id"]
    run["output"] = {"title": "t", "summary": "s" * 65_536}
    status, _h, body = await raw(session, "POST", url + "/check-runs", gh.oauth_token, json=run)
    assert status == 422 and "65535" in body["message"]


async def test_a_check_required_from_an_app_is_satisfied_by_that_app_alone(
        emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    other = em.add_app("ci-bot")
    em.set_required_checks("acme/deploy", ["conveyor/promotion-gate"], app_id=em.world.app_id)
    branch = await gh.getitem(R + "/branches/main")
    assert branch["protection"]["required_status_checks"]["checks"] == [
        {"context": "conveyor/promotion-gate", "app_id": em.world.app_id}]
    await branch_with(em, "promo", {"x.txt": "x\n"})
    pr = await em.open_pull("acme/deploy", "promo", title="P", author="alice")
    sha = pr["head"]["sha"]
    await em.set_status("acme/deploy", sha, "conveyor/promotion-gate", "success", user="alice")
    await em.create_check_run("acme/deploy", sha, "conveyor/promotion-gate", app="ci-bot",
                              conclusion="success")
    assert (await gh.getitem(R + f"/pulls/{pr['number']}"))["mergeable_state"] == "blocked"
    await gh.post(R + "/check-runs", data={"name": "conveyor/promotion-gate", "head_sha": sha,
                                           "conclusion": "success",
                                           "output": {"title": "ok", "summary": "ok"}})
    assert (await gh.getitem(R + f"/pulls/{pr['number']}"))["mergeable_state"] == "clean"
    assert other != em.world.app_id


async def test_rulesets_are_read_per_branch_and_404_on_a_server_without_them(
        emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    assert await gh.getitem(R + "/rules/branches/main") == []
    ruleset = em.add_ruleset("acme/deploy", [("conveyor/promotion-gate", em.world.app_id),
                                             ("ci/lint", None)])
    [rule] = await gh.getitem(R + "/rules/branches/main")
    assert rule["type"] == "required_status_checks" and rule["ruleset_id"] == ruleset
    assert rule["parameters"]["required_status_checks"] == [
        {"context": "conveyor/promotion-gate", "integration_id": em.world.app_id},
        {"context": "ci/lint"}]
    await branch_with(em, "promo", {"x.txt": "x\n"})
    pr = await em.open_pull("acme/deploy", "promo", title="P", author="alice")
    assert (await gh.getitem(R + f"/pulls/{pr['number']}"))["mergeable_state"] == "blocked"
    em.world.rulesets_supported = False
    with pytest.raises(BadRequest) as err:
        await gh.getitem(R + "/rules/branches/main")
    assert err.value.status_code == 404


async def test_a_ruleset_carries_up_to_date_and_a_pull_request_rule_as_github_shows_them(
        emulator: Emulator, gh: GitHubAPI) -> None:
    em = emulator
    checks = em.add_ruleset("acme/deploy", [("conveyor/promotion-gate", em.world.app_id)],
                            strict=True)
    reviews = em.add_ruleset("acme/deploy", [],
                             pull_request={"require_last_push_approval": True,
                                           "required_approving_review_count": 1})
    [status_checks, pull_request] = await gh.getitem(R + "/rules/branches/main")
    assert status_checks["ruleset_id"] == checks
    assert status_checks["parameters"]["strict_required_status_checks_policy"] is True
    assert pull_request == {
        "type": "pull_request", "ruleset_source_type": "Repository",
        "ruleset_source": "acme/deploy", "ruleset_id": reviews,
        "parameters": {"allowed_merge_methods": ["merge", "squash", "rebase"],
                       "dismiss_stale_reviews_on_push": False,
                       "require_code_owner_review": False,
                       "require_last_push_approval": True,
                       "required_approving_review_count": 1,
                       "required_review_thread_resolution": False}}
    assert em.violations == []  # both as GitHub's description requires them
    branch = await gh.getitem(R + "/branches/main")  # rulesets are not branch protection
    assert branch["protection"]["enabled"] is False
    assert "strict" not in branch["protection"]["required_status_checks"]
    with pytest.raises(ValueError, match="dismiss_stale_reviews"):
        em.add_ruleset("acme/deploy", [], pull_request={"dismiss_stale_reviews": True})
