"""The security properties of section 10 as tests: signature first, gates from the default
branch only, no path outside the repository, no regexp that can hang a worker, no secret in
the logs, and tokens that can be scoped to repositories."""

from __future__ import annotations

import hashlib
import hmac
import inspect
import io
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from gidgethub import sansio

from bot.domain.gate.model import Verdict
from bot.domain.policy import PolicyError, load_policy
from bot.domain.promotions.marker import PromotionMarker
from bot.domain.promotions.trailers import CommitTrailers, Moved
from bot.domain.tags import MAX_TAG_LENGTH, TagPolicy
from bot.promotion.authorship.trust import ConveyorCommit
from bot.promotion.gate import gatekeeper
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import DeploymentRepo
from bot.promotion.resync.reconcile import resync_all
from bot.runtime.logs import configure_logging
from bot.sandbox.demo import DEMO_POLICY, DEPLOY_REPO, digest_of
from tests.harness import SECRET, World, pinned_kustomization
from tests.reliability.support import post_signed

REPO_ROOT = Path(__file__).resolve().parents[2]
PROD = "apps/web/overlays/prod/kustomization.yaml"


# -- signature first ------------------------------------------------------------------------------

def release_payload(world: World) -> dict[str, object]:
    return {"action": "released", "installation": {"id": world.demo.installation_id},
            "repository": {"full_name": "acme/web", "name": "web", "id": 2,
                           "owner": {"login": "acme"}, "default_branch": "main"},
            "sender": {"login": "mallory", "type": "User"},
            "release": {"tag_name": "v9.9.9", "draft": False, "prerelease": False,
                        "author": {"login": "mallory"}}}


async def test_nothing_is_processed_before_the_signature_is_verified(rworld: World) -> None:
    world = rworld
    at_start = len(world.emulator.requests.entries)
    body = json.dumps(release_payload(world)).encode()
    forged = "sha256=" + hmac.new(b"guessed-secret", body, hashlib.sha256).hexdigest()
    cases = [
        ({"X-GitHub-Event": "release", "X-GitHub-Delivery": "forged-1",
          "X-Hub-Signature-256": forged}, body),
        # malformed JSON and missing headers would be 400 — but the signature comes first
        ({"X-GitHub-Event": "release", "X-GitHub-Delivery": "forged-2",
          "X-Hub-Signature-256": forged}, b"{not json"),
        ({"X-Hub-Signature-256": forged}, body),
        # GitHub's legacy SHA-1 signature alone is not accepted
        ({"X-GitHub-Event": "release", "X-GitHub-Delivery": "forged-3",
          "X-Hub-Signature": "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()},
         body),
    ]
    async with aiohttp.ClientSession() as session:
        for headers, data in cases:
            async with session.post(world.webhook_url, data=data, headers=headers) as response:
                assert response.status == 401, (headers, await response.text())
        await world.conveyor.pool.wait_idle()
        assert len(world.emulator.requests.entries) == at_start
        assert world.conveyor.queue.depth() == 0
        # A forged delivery id is not remembered: the genuine delivery with that id is accepted.
        status = await post_signed(session, world.webhook_url, "release",
                                   release_payload(world), "forged-1")
        assert status == 202
    # the comparison is gidgethub's, in constant time
    assert "compare_digest" in inspect.getsource(sansio.validate_event)


# -- the gate comes from the default branch -------------------------------------------------------

async def test_a_pr_that_relaxes_its_own_gate_is_judged_by_the_default_branch_policy(
    rworld: World,
) -> None:
    world = rworld
    relaxed = (DEMO_POLICY.replace("    after: staging\n", "")
               .replace("    approvals: 1\n", "")
               .replace("    evidence: [merged, deployed]\n", "")
               .replace("    soak: 30m\n", ""))
    assert "after:" not in relaxed
    digest = digest_of("web:6.6.6")
    await world.emulator.push_files(DEPLOY_REPO, {
        ".github/conveyor.yml": relaxed,
        PROD: pinned_kustomization("6.6.6", digest),
    }, branch="mallory/fast-track", author="carol", message="Ship it")
    await world.emulator.open_pull(DEPLOY_REPO, "mallory/fast-track", title="Ship it",
                                   author="carol")
    await world.settle()
    pr = world.pull("Ship it", state="open")
    gate = world.gate(pr)
    assert gate["status"] == "completed" and gate["conclusion"] == "failure", gate["output"]
    assert "no gated environment changed" not in gate["output"]["summary"]
    # ... and it stays so however often it is re-evaluated
    await world.emulator.comment(DEPLOY_REPO, pr["number"], "alice", "/recheck")
    await world.settle()
    assert world.gate(pr)["conclusion"] == "failure"
    policy = world.conveyor.capabilities.policies
    repo = await policy.get(await world.conveyor.ctx.clients.installation(
        world.demo.installation_id), world.demo.installation_id, DEPLOY_REPO)
    assert repo is not None and repo.policy is not None
    assert repo.policy.environments["production"].after == ("staging",)


# -- paths ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["../outside/{service}.yaml", "/etc/{service}.yaml",
                                  "apps/../../{service}.yaml", "apps/{service}/../../../x.yaml"])
def test_policy_validation_refuses_paths_outside_the_repository(path: str) -> None:
    text = DEMO_POLICY.replace("path: apps/{service}/overlays/staging/kustomization.yaml",
                               f"path: {path}")
    with pytest.raises(PolicyError) as raised:
        load_policy(text, ".github/conveyor.yml")
    assert any(issue.line == 17 or "path" in issue.message for issue in raised.value.issues)


def test_policy_validation_refuses_a_service_path_outside_the_repository() -> None:
    text = DEMO_POLICY.replace("staging: charts/api/values-staging.yaml",
                               "staging: ../../secrets/values.yaml")
    with pytest.raises(PolicyError):
        load_policy(text, ".github/conveyor.yml")


def run_bump(repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", "bump", "--repo", str(repo), "--service", "web",
         "--env", "staging", "--image",
         f"ghcr.io/acme/web:1.0.0@{digest_of('web:1.0.0')}", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    repo = tmp_path / "deploy"
    (repo / ".github").mkdir(parents=True)
    target = tmp_path / "outside" / "staging" / "kustomization.yaml"
    target.parent.mkdir(parents=True)
    target.write_text(pinned_kustomization("0.9.0", digest_of("web:0.9.0")))
    yield repo, target


def test_bump_refuses_a_policy_path_with_dotdot(outside: tuple[Path, Path]) -> None:
    repo, target = outside
    before = target.read_text()
    (repo / ".github" / "conveyor.yml").write_text(DEMO_POLICY.replace(
        "path: apps/{service}/overlays/staging/kustomization.yaml",
        "path: ../outside/staging/kustomization.yaml"))
    result = run_bump(repo, "--write")
    assert result.returncode == 1
    assert "conveyor.yml:" in result.stderr and result.stdout == ""
    assert target.read_text() == before


def test_bump_refuses_a_symlink_that_leaves_the_repository(outside: tuple[Path, Path]) -> None:
    repo, target = outside
    before = target.read_text()
    (repo / ".github" / "conveyor.yml").write_text(DEMO_POLICY)
    (repo / "apps" / "web").mkdir(parents=True)
    (repo / "apps" / "web" / "overlays").symlink_to(target.parent.parent)
    result = run_bump(repo, "--write")
    assert result.returncode == 1
    assert "outside the repository" in result.stderr
    assert target.read_text() == before


# -- hostile regular expressions ------------------------------------------------------------------

HOSTILE = ["(a+)+$", "(a|a)*$", "(a*)*b", "(.*a){20}", "(a|aa)+$", "^(\\w+\\s?)*$",
           "(x+x+)+y", "([a-z]+)*1"]


@pytest.mark.parametrize("pattern", HOSTILE)
def test_a_hostile_tag_regexp_cannot_hang_a_worker(pattern: str) -> None:
    try:
        policy = TagPolicy.parse(f"regexp:{pattern}")
    except ValueError:
        text = DEMO_POLICY.replace('tags: "semver:>=1.0.0"', f'tags: "regexp:{pattern}"')
        with pytest.raises(PolicyError):
            load_policy(text, ".github/conveyor.yml")
        return
    # Admitted patterns run on bounded input only: the worst case stays fast.
    for tag in ("a" * MAX_TAG_LENGTH + "!", "a" * 5000, "x" * MAX_TAG_LENGTH,
                "ab" * (MAX_TAG_LENGTH // 2) + "!"):
        started = time.monotonic()
        policy.admits(tag)
        assert time.monotonic() - started < 0.2, (pattern, len(tag))


def test_the_classic_catastrophic_patterns_are_refused_by_validation() -> None:
    for pattern in ("(a+)+$", "(a|a)*$", "(a*)*b"):
        text = DEMO_POLICY.replace('tags: "semver:>=1.0.0"', f'tags: "regexp:{pattern}"')
        with pytest.raises(PolicyError):
            load_policy(text, ".github/conveyor.yml")


# -- secrets never in the logs --------------------------------------------------------------------

@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    stream = io.StringIO()
    configure_logging("DEBUG", stream)
    try:
        yield stream
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


async def test_tokens_private_key_and_secret_never_reach_the_logs(
    rworld: World, captured_logs: io.StringIO,
) -> None:
    world = rworld
    emulator = world.emulator
    # A full flow: release → staging merged → /promote production → approval → a forged
    # delivery and an expired token along the way.
    await world.release("web", "1.0.0")
    staging = world.pull("Promote web 1.0.0 to staging")
    await emulator.comment(DEPLOY_REPO, staging["number"], "alice", "/promote production")
    await world.settle()
    production = world.pull("Promote web 1.0.0 to production", state="open")
    await emulator.review(DEPLOY_REPO, production["number"], "bob", "APPROVE")
    await world.settle()
    world.conveyor.ctx.clients.auth.forget(world.demo.installation_id)
    await world.release("api", "1.0.0")
    async with aiohttp.ClientSession() as session:
        body = b'{"zen": "x"}'
        async with session.post(world.webhook_url, data=body, headers={
                "X-GitHub-Event": "ping", "X-GitHub-Delivery": "x",
                "X-Hub-Signature-256": "sha256=" + "0" * 64}) as response:
            assert response.status == 401
    await world.settle()

    logs = captured_logs.getvalue()
    assert len(logs.splitlines()) > 20, "the flow logged nothing: the capture is broken"
    for line in logs.splitlines():
        json.loads(line)  # every line is one JSON object
    tokens = list(emulator.world.tokens)
    assert len(tokens) >= 2  # the flow minted tokens, and a fresh one after `forget`
    for token in tokens:
        assert token not in logs
    assert SECRET not in logs
    pem = emulator.app_private_key_pem
    assert "PRIVATE KEY" not in logs
    for line in pem.splitlines():
        if len(line) >= 16 and not line.startswith("-----"):
            assert line not in logs
    jwt = world.conveyor.ctx.clients.auth.jwt()
    assert jwt not in logs and jwt.split(".")[2] not in logs
    assert not re.search(r"\bghs_[A-Za-z0-9]{10,}", logs)


# -- installation tokens scoped to repositories ---------------------------------------------------

async def test_a_token_scoped_to_the_deployment_repository_cannot_touch_another(
    rworld: World,
) -> None:
    world = rworld
    clients = world.conveyor.ctx.clients
    installation_id = world.demo.installation_id
    minted = clients.auth.tokens_minted
    scoped = await clients.installation(installation_id, repositories=(DEPLOY_REPO,))
    assert (await scoped.getitem(f"/repos/{DEPLOY_REPO}"))["full_name"] == DEPLOY_REPO
    with pytest.raises(Exception) as denied:
        await scoped.getitem("/repos/acme/web")
    assert getattr(denied.value, "status_code", None) == 404
    again = await clients.installation(installation_id, repositories=(DEPLOY_REPO,))
    await again.getitem(f"/repos/{DEPLOY_REPO}/pulls?state=all")
    assert clients.auth.tokens_minted == minted + 1  # cached per scope: one token request


async def test_a_forged_marker_on_a_conveyor_named_branch_is_never_merged_by_the_resync(
    rworld: World,
) -> None:
    """Anyone with a branch can name it `conveyor/...` and copy a marker into the body; the
    resync finishes only the PRs this app opened itself."""
    world = rworld
    digest = digest_of("web:6.6.6")
    branch = f"conveyor/staging/web-{digest[7:19]}"
    staging = "apps/web/overlays/staging/kustomization.yaml"
    head = await world.emulator.push_files(
        DEPLOY_REPO, {staging: pinned_kustomization("6.6.6", digest)}, branch=branch,
        author="carol", message="Promote web 6.6.6 to staging")
    marker = PromotionMarker(service="web", environment="staging", digest=digest, tag="6.6.6",
                             version="6.6.6", paths=(staging,), source_repo="acme/web",
                             commit=head)
    await world.emulator.open_pull(DEPLOY_REPO, branch, title="Promote web 6.6.6 to staging",
                                   body=f"Looks legit\n\n{marker.render()}", author="carol")
    await world.settle()
    await resync_all(world.conveyor.capabilities.resync)
    await world.settle()
    forged = world.pull("Promote web 6.6.6 to staging")
    assert forged["state"] == "open" and not forged["merged"]
    text = world.emulator.file(DEPLOY_REPO, staging)
    assert text is not None and digest not in text


async def test_only_prs_opened_by_conveyor_auto_merge_when_their_gate_passes(
    rworld: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = rworld
    capabilities = world.conveyor.capabilities
    ctx = capabilities.ctx
    assert ctx.bot_login  # learned from GET /app at start-up
    merged: list[int] = []

    async def record(_ctx: object, _gh: object, _repo: str, number: int, *args: object,
                     **kwargs: object) -> bool:
        merged.append(number)
        return True

    monkeypatch.setattr(gatekeeper, "merge_promotion", record)
    policy = load_policy(DEMO_POLICY.replace("    merge_method: squash\n",
                                             "    merge_method: squash\n    auto_merge: true\n"),
                         ".github/conveyor.yml")
    assert policy.environments["production"].gated
    repo = DeploymentRepo(DEPLOY_REPO, policy=policy)
    digest = digest_of("web:6.6.6")
    marker = PromotionMarker(service="web", environment="production", digest=digest,
                             tag="6.6.6", version="6.6.6", paths=(PROD,),
                             source_repo="acme/web", commit="a" * 40)
    passed = Verdict(status="completed", conclusion="success", title="ok", conditions=(),
                     recheck_at=None)
    gh = await ctx.clients.installation(world.demo.installation_id)
    def conveyors(head: bool) -> ConveyorCommit:
        return ConveyorCommit(sha="a" * 40, head=head, trailers=CommitTrailers(
            environment="production", moved=(Moved("web", digest, "acme/web"),),
            version="6.6.6", tag="6.6.6"))

    # 1: a marker in someone else's PR; 2: Conveyor's commit is the head; 3: someone pushed.
    for number, trusted in ((1, None), (2, conveyors(True)), (3, conveyors(False))):
        facts = PullFacts(number=number, head_sha="a" * 40, base_sha="b" * 40, author="carol",
                          labels=(), marker=marker, html_url="", state="open", trusted=trusted)
        await capabilities.gates._auto_merge(gh, repo, facts, passed)
    assert merged == [2]
