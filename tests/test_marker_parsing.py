"""The hidden marker in Conveyor's PR bodies (bot/domain/promotions/marker.py): what a
hand-edited or copied marker that does not read back gives (nothing), and how a release train's
marker stands for one promotion per service it moves."""

from __future__ import annotations

import pytest

from bot.domain.promotions.marker import (
    PromotionMarker,
    TrainMember,
    branch_environment,
    branch_name,
    parse_marker,
    service_markers,
    train_branch_name,
)

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


@pytest.mark.parametrize("body", [
    None, "", "no marker here",
    "<!-- conveyor:{not json} -->",
    '<!-- conveyor:{"service": "web"} -->',  # no environment, no digest
    '<!-- conveyor:{"service": "web", "environment": "staging", "digest": "x", '
    '"upstream_pr": "seven"} -->',
    '<!-- conveyor:{"service": "web", "environment": "staging", "digest": "x", '
    '"members": ["web"]} -->',
    '<!-- conveyor:{"service": "web", "environment": "staging", "digest": "x", '
    '"members": [{"service": "web"}]} -->',
    "<!-- conveyor:{" + '"x": "' + "y" * 70_000 + '"} -->',  # past the marker's size bound
])
def test_a_marker_that_does_not_read_back_is_none(body: str | None) -> None:
    assert parse_marker(body) is None


def test_a_train_stands_for_a_promotion_per_service() -> None:
    train = PromotionMarker(
        service="storefront", environment="production", digest="sha256:" + "c" * 64,
        tag=None, version="", paths=("web.yaml", "api.yaml"), source_repo="", kind="rollback",
        requester="bob", commit="d" * 40, group="storefront",
        members=(TrainMember("web", A, "1.4.2", "1.4.2", "web.yaml", previous_digest=B,
                             previous_tag="1.4.1", source_sha="e" * 40),
                 TrainMember("api", B, None, "2.0.0", "api.yaml")))
    back = parse_marker(f"Roll back storefront\n\n{train.render()}\n")
    assert back == train and back.is_train
    web, api = service_markers(back)
    assert (web.service, web.digest, web.tag, web.paths, web.kind, web.previous_tag,
            web.source_sha, web.requester, web.commit) == (
        "web", A, "1.4.2", ("web.yaml",), "rollback", "1.4.1", "e" * 40, "bob", "d" * 40)
    assert (api.service, api.digest, api.tag, api.version) == ("api", B, None, "2.0.0")
    single = parse_marker(PromotionMarker("web", "staging", A, "1.0.0", "1.0.0", ("w.yaml",),
                                          "acme/web").render())
    assert single is not None and service_markers(single) == [single]


def test_the_environment_a_promotion_branch_names() -> None:
    digest = "sha256:" + "ab" * 32
    assert branch_environment(branch_name("staging", "web", digest)) == "staging"
    assert branch_environment(branch_name("prod", "web", digest, rollback=True)) == "prod"
    assert branch_environment(train_branch_name("prod", "shop", digest)) == "prod"
    assert branch_environment(train_branch_name("eu", "shop", digest, rollback=True)) == "eu"
    # an environment named like the rollback folder reads the same both ways
    assert branch_environment(branch_name("rollback", "web", digest)) == "rollback"
    assert branch_environment(branch_name("rollback", "web", digest, rollback=True)) == \
        "rollback"
    for other in ("main", "conveyor", "hand/conveyor/staging/web-1", "conveyor/a/b/c/d"):
        assert branch_environment(other) is None
