"""Which commits are Conveyor's own, and what their trailers say (pure)."""

from __future__ import annotations

from typing import Any

from bot.domain.promotions.marker import PromotionMarker
from bot.domain.promotions.trailers import (
    CommitTrailers,
    Moved,
    commit_message,
    parse_trailers,
    read_trailers,
)
from bot.promotion.authorship.trust import (
    authored_by,
    conveyor_commit,
    reconcile,
    reconcile_train,
    signed_as,
)

BOT = "conveyor[bot]"
DIGEST = "sha256:" + "a" * 64
MESSAGE = (
    "Promote web 1.4.2 to production\n\nConveyor-Service: web\n"
    "Conveyor-Environment: production\n"
    f"Conveyor-Digest: {DIGEST}\nConveyor-Source: acme/web@{'c' * 40}\n"
    "Conveyor-Version: 1.4.2\nConveyor-Tag: v1.4.2\nConveyor-Requested-By: dave\n"
)


def commit(author: str = BOT, committer: str = "web-flow", verified: bool = True,
           message: str = MESSAGE) -> dict[str, Any]:
    return {"sha": "f" * 40, "author": {"login": author}, "committer": {"login": committer},
            "commit": {"message": message, "verification": {"verified": verified}}}


def test_githubs_signature_as_the_app_is_one_proof_of_a_conveyor_commit() -> None:
    """The other, Conveyor's receipt, is read over HTTP (tests/flows/test_unsigned_server.py)."""
    assert authored_by(commit(), BOT) and signed_as(commit(), BOT)
    assert signed_as(commit(committer=BOT), BOT)
    assert not signed_as(commit(verified=False), BOT)  # the bot's e-mail in a pushed commit
    assert not authored_by(commit(author="alice"), BOT)
    assert not signed_as(commit(committer="alice"), BOT)
    assert not authored_by(commit(), "")


def test_trailers_are_the_last_paragraph_only() -> None:
    text = "Title\n\nConveyor-Digest: in the body\n\nConveyor-Service: web\nnot a trailer line\n"
    assert parse_trailers(text) == {"Conveyor-Service": ["web"]}
    assert parse_trailers("Conveyor-Service: web") == {}


def test_the_trusted_facts_override_an_edited_marker() -> None:
    found = conveyor_commit(commit(), head=True)
    assert found is not None
    assert (found.service, found.digest, found.requester, found.tag) == (
        "web", DIGEST, "dave", "v1.4.2")
    edited = PromotionMarker(service="web", environment="production", digest=DIGEST,
                             tag="9.9.9", version="9.9.9", paths=("p.yaml",),
                             source_repo="evil/web", requester="alice", commit="0" * 40)
    marker = reconcile(edited, found)
    assert (marker.requester, marker.version, marker.source_repo, marker.commit) == (
        "dave", "1.4.2", "acme/web", "f" * 40)
    assert marker.paths == ("p.yaml",)  # display details survive when the story agrees
    other = reconcile(PromotionMarker(service="api", environment="production", digest=DIGEST,
                                      tag=None, version="x", paths=("q.yaml",),
                                      source_repo=""), found)
    assert (other.service, other.paths) == ("web", ())


def test_versions_and_tags_come_from_the_commit_never_from_an_agreeing_marker() -> None:
    edited = PromotionMarker(service="web", environment="production", digest=DIGEST,
                             tag="99.0.0", version="99.0.0", paths=("p.yaml",),
                             source_repo="acme/web", release_tag="v99.0.0")
    written = CommitTrailers(environment="production",
                             moved=(Moved("web", DIGEST, "acme/web", "c" * 40),),
                             version="1.4.2", tag="1.4.2", release_tag="v1.4.2")
    message = commit_message("Promote web 1.4.2 to production", [], written)
    assert "Conveyor-Release: v1.4.2\n" in message and read_trailers(message) == written
    found = conveyor_commit(commit(message=message), head=True)
    assert found is not None
    marker = reconcile(edited, found)
    assert (marker.version, marker.tag, marker.release_tag, marker.paths) == (
        "1.4.2", "1.4.2", "v1.4.2", ("p.yaml",))
    # a commit that names no release tag and no version: none comes from the marker either
    bare = conveyor_commit(commit(message=MESSAGE.replace("Conveyor-Version: 1.4.2\n", "")),
                           head=True)
    assert bare is not None
    marker = reconcile(edited, bare)
    assert (marker.version, marker.release_tag) == ("v1.4.2", None)


def test_a_commit_without_trailers_is_not_a_promotion() -> None:
    assert conveyor_commit(commit(message="Update README\n"), head=True) is None


def test_trailers_of_a_train_read_back_every_service_with_its_own_source() -> None:
    written = CommitTrailers(
        environment="production", train="storefront", requester="alice",
        moved=(Moved("web", DIGEST, "acme/web", "c" * 40), Moved("api", "sha256:" + "b" * 64,
                                                                 "acme/api", None)))
    message = commit_message("Promote storefront to production (2 services)",
                             ["web: 1.0.0 → 1.1.0"], written)
    assert read_trailers(message) == written
    assert "Conveyor-Source: acme/api@unknown" in message
    single = CommitTrailers(environment="staging", moved=(Moved("web", DIGEST, "acme/web"),),
                            version="1.4.2", rollback=True)
    assert read_trailers(commit_message("Roll back web", [], single)) == single
    assert read_trailers("Promote web\n\nConveyor-Service: web\nConveyor-Service: api\n"
                         f"Conveyor-Environment: staging\nConveyor-Digest: {DIGEST}\n") is None


def test_a_train_rollback_is_asked_one_way_a_train_and_a_rollback() -> None:
    """Whether a PR moves a group and whether it goes back are two questions, each asked of
    the commit and of the marker alike: a train's rollback answers yes to both."""
    moved = (Moved("web", DIGEST, "acme/web", "c" * 40),
             Moved("api", "sha256:" + "b" * 64, "acme/api", None))
    answers = []
    for train, rollback in ((None, False), (None, True), ("storefront", False),
                            ("storefront", True)):
        trailers = CommitTrailers(environment="production", train=train, rollback=rollback,
                                  moved=moved if train else moved[:1], version="1.4.2")
        found = conveyor_commit(commit(message=commit_message("Title", [], trailers)),
                                head=True)
        assert found is not None
        marker = reconcile_train(None, found) if found.is_train else reconcile(None, found)
        assert (found.is_train, found.rollback) == (marker.is_train, marker.is_rollback)
        answers.append((marker.is_train, marker.is_rollback, marker.kind))
        # a train's marker never tells a single service's story, rollback or not
        assert found.agrees_with(marker) is not found.is_train
    assert answers == [(False, False, "promotion"), (False, True, "rollback"),
                       (True, False, "train"), (True, True, "rollback")]
