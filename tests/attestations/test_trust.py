"""Trusted roots: from a file (`CONVEYOR_SIGSTORE_TRUST`), or from TUF repositories (here a
local one, made and served by the test) refreshed daily; what /healthz says about them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.attestations import tuf
from bot.attestations.roots import RootError, load_root, load_roots_text
from bot.attestations.trust import (
    STALE_AFTER,
    SigstoreTrust,
    default_cache,
    read_trust_file,
)
from bot.attestations.trustfile import TrustFile
from bot.attestations.tuf import TufError, TufRepository
from conveyor_emulator.sigstore.instance import GitHubSigstore, SigstoreInstance

from .sigstores import AT, run, statement
from .tufrepo import TufRepo

SIGSTORE = GitHubSigstore()


def trusted_root(instance: SigstoreInstance) -> bytes:
    return json.dumps(instance.trusted_root()).encode()


def test_a_file_of_roots_is_read_once_and_names_its_roots(tmp_path: Path) -> None:
    path = tmp_path / "roots.jsonl"
    path.write_text(SIGSTORE.trusted_roots())
    trust = SigstoreTrust(file=read_trust_file(str(path)))
    _, roots, missing = trust.current()
    assert [root.name for root in roots or []] == ["emulated-public-good", "emulated-github"]
    assert missing is None and not trust.fetches
    health = trust.health()
    assert health["source"] == f"CONVEYOR_SIGSTORE_TRUST ({path})"
    assert list(health["roots"]) == ["emulated-public-good", "emulated-github"]
    assert "problem" not in health
    verdict = trust.verifier.verify(SIGSTORE.github.sign(statement(), run(), AT))
    assert verdict.problem is None and verdict.root == "emulated-github"


def test_one_root_as_a_json_document_and_two_of_one_organisation_stay_apart() -> None:
    one = json.dumps(SIGSTORE.github.trusted_root(), indent=2)
    assert [r.name for r in load_roots_text(one)] == ["emulated-github"]
    twice = load_roots_text(f"{json.dumps(SIGSTORE.github.trusted_root())}\n\n"
                            f"{json.dumps(SigstoreInstance.github().trusted_root())}\n")
    assert [r.name for r in twice] == ["emulated-github", "emulated-github (2)"]


@pytest.mark.parametrize(("text", "problem"), [
    ("", "holds no trusted root"),
    ("[1, 2]", "expected trusted roots as JSON objects, one a line"),
    ('{"mediaType": "x"}', "line 1: not a Sigstore trusted root"),
    ("{}\nnot json", "line 1: not a Sigstore trusted root"),
    ("\n".join(["{}"] * 33), "holds 33 trusted roots; at most 32"),
])
def test_a_file_that_is_not_roots_is_refused_naming_the_line(text: str, problem: str) -> None:
    with pytest.raises(RootError) as raised:
        load_roots_text(text)
    assert str(raised.value).startswith(problem), raised.value


def test_a_trust_file_that_cannot_be_read_or_holds_no_root(tmp_path: Path) -> None:
    with pytest.raises(RootError, match="cannot be read: No such file or directory"):
        read_trust_file(str(tmp_path / "absent.jsonl"))
    broken = tmp_path / "broken.jsonl"
    broken.write_text(SIGSTORE.trusted_roots() + "{}\n")
    with pytest.raises(RootError, match=f"^{broken}: line 3: not a Sigstore trusted root"):
        read_trust_file(str(broken))
    with pytest.raises(RootError, match="larger than 1024 KiB"):
        load_root("x" * (1024 * 1024 + 1))


def test_without_a_file_or_a_repository_nothing_is_trusted() -> None:
    trust = SigstoreTrust()
    _, roots, missing = trust.current()
    assert roots is None
    assert missing == ("CONVEYOR_SIGSTORE_TRUST is not set and no TUF repository is "
                       "configured")
    assert trust.health() == {"source": "none", "roots": {}, "problem": missing}


def test_the_shipped_bootstrap_roots_are_tuf_roots() -> None:
    from tuf.api.metadata import Metadata

    for repository in (tuf.public_good(), tuf.github()):
        root = Metadata.from_bytes(repository.bootstrap)
        assert root.signed.type == "root"
    assert tuf.github().url == "https://tuf-repo.github.com"
    assert tuf.public_good().url == "https://tuf-repo-cdn.sigstore.dev"


@pytest.fixture
async def repo(tmp_path: Path) -> AsyncIterator[TufRepo]:
    served = TufRepo(tmp_path / "repository")
    await served.start()
    try:
        yield served
    finally:
        await served.stop()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_roots_come_from_a_tuf_repository_and_are_refreshed(
        repo: TufRepo, tmp_path: Path) -> None:
    github = SIGSTORE.github
    repo.publish(trusted_root(github))
    clock = Clock()
    repository = TufRepository("GitHub", repo.url, repo.bootstrap)
    trust = SigstoreTrust(repositories=[repository], cache=lambda: tmp_path / "cache",
                          clock=clock)
    assert trust.fetches
    assert trust.current()[2] == "the trusted roots are still being loaded"
    await trust.refresh()
    generation, roots, missing = trust.current()
    assert [r.name for r in roots or []] == ["GitHub"] and missing is None
    assert trust.health() == {"source": "TUF", "roots": {"GitHub": "2026-12-01T00:00:00Z"}}
    assert trust.verifier.verify(github.sign(statement(), run(), AT)).root == "GitHub"

    # the repository rotates its root key and publishes another instance's root
    repo.rotate_root()
    other = SigstoreInstance.github("rotated")
    repo.publish(trusted_root(other))
    clock.now += timedelta(days=1)
    await trust.refresh()
    assert trust.current()[0] == generation + 1
    assert trust.verifier.verify(other.sign(statement(), run(), AT)).root == "GitHub"
    assert trust.verifier.verify(github.sign(statement(), run(), AT)).problem is not None


async def test_a_target_the_metadata_do_not_vouch_for_is_refused(
        repo: TufRepo, tmp_path: Path) -> None:
    repo.publish(trusted_root(SIGSTORE.github), tamper=True)
    repository = TufRepository("GitHub", repo.url, repo.bootstrap)
    with pytest.raises(TufError, match=f"^{repo.url}: LengthOrHashMismatchError: "):
        await asyncio.to_thread(repository.fetch, tmp_path / "cache")


async def test_a_failed_refresh_keeps_the_last_root_for_a_week(
        repo: TufRepo, tmp_path: Path) -> None:
    repo.publish(trusted_root(SIGSTORE.github))
    clock = Clock()
    trust = SigstoreTrust(repositories=[TufRepository("GitHub", repo.url, repo.bootstrap)],
                          cache=lambda: tmp_path / "cache", clock=clock)
    await trust.refresh()
    await repo.stop()
    clock.now += timedelta(days=1)
    await trust.refresh()
    _, roots, missing = trust.current()
    assert roots is not None  # still the root of the last refresh
    assert missing is not None and missing.startswith(f"GitHub: {repo.url}: ")
    clock.now += STALE_AFTER
    _, roots, missing = trust.current()
    assert roots is None
    assert missing is not None and missing.startswith(
        "GitHub: last refreshed 2026-12-01 00:00 UTC, more than 7 days ago (GitHub: ")
    assert trust.health()["problem"] == missing


async def test_a_repository_never_reached_fails_closed_with_the_reason(tmp_path: Path) -> None:
    bootstrap = TufRepo(tmp_path / "unserved").bootstrap
    trust = SigstoreTrust(
        repositories=[TufRepository("public-good", "http://127.0.0.1:9", bootstrap)],
        cache=lambda: tmp_path / "cache")
    await trust.refresh()
    _, roots, missing = trust.current()
    assert roots is None
    assert missing is not None and missing.startswith("public-good: http://127.0.0.1:9: ")
    verdict = trust.verifier.verify(SIGSTORE.public_good.sign(statement(), run(), AT))
    assert verdict.unverifiable and verdict.problem is not None


async def test_a_repository_without_a_trusted_root_target(repo: TufRepo, tmp_path: Path
                                                          ) -> None:
    repo.publish(None)
    repository = TufRepository("GitHub", repo.url, repo.bootstrap)
    with pytest.raises(TufError, match=r"lists no trusted_root\.json"):
        await asyncio.to_thread(repository.fetch, tmp_path / "cache")


async def test_keep_fresh_refreshes_daily_and_soon_while_a_root_is_missing(
        repo: TufRepo, tmp_path: Path) -> None:
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            raise asyncio.CancelledError

    missing = SigstoreTrust(
        repositories=[TufRepository("GitHub", "http://127.0.0.1:9", repo.bootstrap)],
        cache=lambda: tmp_path / "cache-missing")
    with pytest.raises(asyncio.CancelledError):
        await missing.keep_fresh(no_sleep)
    assert waits == [900.0, 900.0]
    repo.publish(trusted_root(SIGSTORE.github))
    waits.clear()
    fresh = SigstoreTrust(repositories=[TufRepository("GitHub", repo.url, repo.bootstrap)],
                          cache=lambda: tmp_path / "cache")
    with pytest.raises(asyncio.CancelledError):
        await fresh.keep_fresh(no_sleep)
    assert waits == [86400.0, 86400.0]
    file_trust = SigstoreTrust(file=read_trust_file_text())
    await file_trust.refresh()  # nothing to fetch
    await file_trust.wait_loaded()


def read_trust_file_text() -> TrustFile:
    return TrustFile("test", SIGSTORE.trusted_roots())


def test_the_tuf_cache_is_the_users_or_a_private_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_cache() == tmp_path / "cache" / "conveyor" / "tuf"
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    fallback = default_cache()
    assert fallback.is_dir() and fallback.name.startswith("conveyor-tuf-")
