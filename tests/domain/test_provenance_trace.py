"""Pure parts of forward traceability: the deployment request and the source PR comment."""

from __future__ import annotations

from bot.domain.promotions.marker import PromotionMarker
from bot.promotion.history.trace import (
    Shipment,
    TracedPromotion,
    deployment_request,
    merge_shipments,
    parse_shipments,
    render_trace_comment,
    status_request,
)

SHA = "c" * 40
DIGEST = "sha256:" + "d" * 64


def marker(environment: str = "staging", kind: str = "promotion") -> PromotionMarker:
    return PromotionMarker(service="web", environment=environment, digest=DIGEST, tag="1.4.2",
                           version="1.4.2", paths=("apps/web.yaml",), source_repo="acme/web",
                           source_sha=SHA, kind=kind)


def promotion(environment: str = "staging", number: int = 42, kind: str = "promotion",
              at: str = "2026-11-30T10:00:00Z") -> TracedPromotion:
    return TracedPromotion(deploy_repo="acme/deploy", number=number,
                     url=f"https://github.com/acme/deploy/pull/{number}", merged_at=at,
                     marker=marker(environment, kind), source_repo="acme/web", source_sha=SHA)


def test_deployment_request_names_the_commit_environment_and_promotion() -> None:
    data = deployment_request(promotion())
    assert data["ref"] == SHA
    assert data["environment"] == "staging"
    assert data["required_contexts"] == []
    assert data["auto_merge"] is False
    assert data["payload"] == {
        "conveyor": "conveyor-promotion", "service": "web", "version": "1.4.2",
        "digest": DIGEST, "promotion_pr": "https://github.com/acme/deploy/pull/42",
        "deployment_repo": "acme/deploy",
    }
    assert data["description"] == "Promoted web 1.4.2 in acme/deploy#42"
    assert deployment_request(promotion(kind="rollback"))["description"].startswith(
        "Rolled back web 1.4.2")


def test_status_request_links_the_promotion_pr() -> None:
    assert status_request(promotion()) == {
        "state": "success", "log_url": "https://github.com/acme/deploy/pull/42",
        "description": "Merged in acme/deploy#42", "auto_inactive": True,
    }


def test_the_comment_names_each_environment_and_round_trips() -> None:
    staging = promotion().shipment()
    production = promotion("production", 45, at="2026-11-30T11:00:00Z").shipment()
    shipped = merge_shipments(merge_shipments([], production), staging)
    assert [s.environment for s in shipped] == ["staging", "production"]  # in time order
    body = render_trace_comment(SHA, shipped)
    assert ("Shipped **web 1.4.2** (`sha256:dddddddddddd`) to staging in acme/deploy#42, "
            "to production in acme/deploy#45.") in body
    assert body.startswith("🚢 Commit cccccccccccc")
    assert parse_shipments(body) == shipped


def test_a_later_promotion_replaces_the_same_environment() -> None:
    first = promotion().shipment()
    again = promotion(number=50, kind="rollback", at="2026-12-01T09:00:00Z").shipment()
    shipped = merge_shipments([first], again)
    assert shipped == [again]
    assert "to staging in acme/deploy#50 (rollback)." in render_trace_comment(SHA, shipped)


def test_marker_text_cannot_end_the_html_comment() -> None:
    sneaky = Shipment("acme/deploy", "web", "pre--prod", 1, "https://x/--/1", "1.4.2", DIGEST,
                      "2026-11-30T10:00:00Z")
    body = render_trace_comment(SHA, [sneaky])
    hidden = body.split("<!-- conveyor:trace ", 1)[1]
    assert "--" not in hidden.removesuffix(" -->")
    assert parse_shipments(body) == [sneaky]


def test_other_comments_are_not_trace_comments() -> None:
    assert parse_shipments(None) is None
    assert parse_shipments("LGTM") is None
    assert parse_shipments("<!-- conveyor:trace [not json] -->") == []
    assert parse_shipments('<!-- conveyor:trace [{"unknown": 1}] -->') == []
    assert parse_shipments('<!-- conveyor:{"service": "web"} -->') is None
