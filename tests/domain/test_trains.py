"""Release trains, pure parts: identity, the previous combination, bodies within the limit."""

from __future__ import annotations

import pytest

from bot.domain.policy import load_policy
from bot.domain.promotions.candidate import Candidate
from bot.domain.promotions.marker import PromotionMarker, TrainMember, parse_marker
from bot.domain.provenance import Link, Provenance
from bot.domain.trains import Period, previous_combination, train_digest
from bot.promotion.opening.body import MAX_BODY, Change
from bot.promotion.trains.body import (
    OPEN_BLOCKS_LIMIT,
    Move,
    TrainTooLarge,
    train_body,
    train_commit_message,
    train_title,
)

A, B, C = ("sha256:" + char * 64 for char in "abc")


def test_train_digest_ignores_order() -> None:
    assert train_digest([A, B]) == train_digest([B, A])
    assert train_digest([A, B]) != train_digest([A, C])
    assert train_digest([A]).startswith("sha256:") and len(train_digest([A])) == 71


def period(digest: str | None, sha: str, at: float) -> Period:
    return Period(digest, "1.0.0", sha, at)


def test_the_services_of_the_latest_change_go_back_together() -> None:
    histories = {
        "web": [period(B, "train", 20), period(A, "seed", 10)],
        "api": [period(C, "train", 20), period(A, "seed", 10)],
        "cart": [period(A, "older", 15), period(B, "seed", 10)],
    }
    choice = previous_combination(histories, "production")
    assert choice.change_sha == "train"
    assert {name: p.digest for name, p in choice.moves.items()} == {"web": A, "api": A}
    assert choice.unchanged == ("cart",)


def test_commits_of_the_same_second_are_ordered_by_the_branch() -> None:
    histories = {
        "web": [period(C, "hotfix", 20), period(B, "train", 20), period(A, "seed", 10)],
        "api": [period(B, "train", 20), period(A, "seed", 10)],
    }
    choice = previous_combination(histories, "production", ["hotfix", "train", "seed"])
    assert choice.change_sha == "hotfix"
    assert {name: p.digest for name, p in choice.moves.items()} == {"web": B}
    assert choice.unchanged == ("api",)


def test_no_change_or_an_unpinned_past_is_refused() -> None:
    never = previous_combination({"web": [period(A, "seed", 10)]}, "production")
    assert never.refusal == (
        "no service of the group changed in production within the history Conveyor reads")
    unpinned = previous_combination(
        {"web": [period(A, "train", 20), period(None, "seed", 10)]}, "production")
    assert unpinned.refusal == (
        "web was not pinned by digest in production before commit train, so Conveyor cannot "
        "prove what ran")


POLICY = load_policy("""\
version: 1
allowed_images: [ghcr.io/acme/]
services:
  web: {image: ghcr.io/acme/web, source: acme/web}
environments:
  - {name: staging, path: "s/{service}.yaml"}
  - {name: production, path: "p/{service}.yaml", after: staging}
""")


def moves(count: int, link_length: int = 40) -> list[Move]:
    found = []
    for index in range(count):
        name = f"svc{index:04d}"
        candidate = Candidate(service=name, image=f"ghcr.io/acme/{name}", digest=A, tag="1.1.0",
                              version="1.1.0", source_repo="acme/mono", trigger="command")
        link = Link("x" * link_length, f"https://github.example/acme/mono/commit/{index}")
        provenance = Provenance(release=link, source_commit=link, workflow_run=link)
        found.append(Move(candidate, Change(f"p/{name}.yaml", "1.0.0", B), provenance))
    return found


def marker_of(found: list[Move]) -> PromotionMarker:
    return PromotionMarker(
        service="shop", environment="production", digest=train_digest([A]), tag=None,
        version=f"{len(found)} services", paths=(), source_repo="", kind="train", group="shop",
        members=tuple(TrainMember(m.candidate.service, A, "1.1.0", "1.1.0", m.change.path, B)
                      for m in found))


@pytest.mark.parametrize(("count", "shape"), [(3, "#### "), (40, "<details><summary><b>"),
                                              (130, "- **svc0000** 1.1.0: ")])
def test_bodies_fold_then_shorten_and_always_fit(count: int, shape: str) -> None:
    found = moves(count)
    marker = marker_of(found)
    body = train_body("shop", POLICY.environments["production"], found, [("web", "1.0.0")],
                      marker)
    assert len(body) <= (OPEN_BLOCKS_LIMIT if shape == "#### " else MAX_BODY)
    assert shape in body
    assert body.count("| svc") == count  # the table always names every service
    parsed = parse_marker(body)
    assert parsed is not None and len(parsed.members) == count
    assert "Left out, already at that digest in production: web `1.0.0`." in body


def test_a_train_too_large_for_one_body_is_refused() -> None:
    found = moves(400)
    with pytest.raises(TrainTooLarge, match="a train of 400 services does not fit"):
        train_body("shop", POLICY.environments["production"], found, [], marker_of(found))


def test_title_and_trailers() -> None:
    found = moves(2)
    assert train_title("shop", "production", 2) == "Promote shop to production (2 services)"
    assert train_title("shop", "production", 1, rollback=True) == (
        "Roll back shop to production (1 service)")
    message = train_commit_message("shop", "production", found)
    trailers = message.split("\n\n")[-1].splitlines()
    assert trailers[:2] == ["Conveyor-Train: shop", "Conveyor-Environment: production"]
    assert trailers[2:] == [
        "Conveyor-Service: svc0000", f"Conveyor-Digest: {A}", "Conveyor-Source: acme/mono@unknown",
        "Conveyor-Service: svc0001", f"Conveyor-Digest: {A}", "Conveyor-Source: acme/mono@unknown",
    ]
