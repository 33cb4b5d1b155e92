"""Each registry refusal says which setting or step fixes it, and never more than one line."""

from __future__ import annotations

from bot.registry.errors import AUTH_SETTING, RegistryError, invalid, refusal
from bot.registry.names import Repository

WEB = Repository("ghcr.io", "acme/web")


def test_a_missing_image_points_at_the_policy() -> None:
    error = refusal(WEB, 404, has_credential=True)
    assert str(error) == ("registry ghcr.io answered 404 for acme/web: "
                          "check the service's image name in the policy")
    assert error.status == 404 and error.repository == WEB


def test_rate_limits_and_server_errors_are_left_to_the_resync() -> None:
    assert str(refusal(WEB, 429, has_credential=False)).endswith("retried later by the resync")
    assert str(refusal(WEB, 502, has_credential=True)).endswith("retried later by the resync")


def test_another_answer_carries_its_detail_or_says_it_was_unexpected() -> None:
    assert str(refusal(WEB, 400, has_credential=False, detail="manifest invalid")) == (
        "registry ghcr.io answered 400 for acme/web: manifest invalid")
    assert str(refusal(WEB, 418, has_credential=False)).endswith(": unexpected answer")


def test_a_refused_credential_is_told_apart_from_a_missing_one() -> None:
    refused = str(refusal(WEB, 403, has_credential=True))
    missing = str(refusal(WEB, 401, has_credential=False))
    assert AUTH_SETTING in refused and "were refused" in refused
    assert missing.endswith(f": set {AUTH_SETTING}")


def test_an_invalid_answer_names_what_was_sent() -> None:
    error = invalid(WEB, "a manifest without a config")
    assert isinstance(error, RegistryError) and error.status is None
    assert str(error) == "registry ghcr.io sent a manifest without a config for acme/web"
