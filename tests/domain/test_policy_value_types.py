"""A policy value of the wrong type is named by its YAML type, on its line and column."""

from __future__ import annotations

import pytest

from bot.domain.policy import PolicyError, load_policy
from bot.sandbox.demo import DEMO_POLICY

ALLOWED = 'allowed_images: ["ghcr.io/acme/"]'


@pytest.mark.parametrize(("value", "named"), [
    ("null", "null"),
    ("1.5", "number"),
    ("7", "integer"),
    ("true", "boolean"),
    ('"ghcr.io/"', "string"),
    ("{a: 1}", "mapping"),
])
def test_the_wrong_type_is_named(value: str, named: str) -> None:
    with pytest.raises(PolicyError) as raised:
        load_policy(DEMO_POLICY.replace(ALLOWED, f"allowed_images: {value}", 1))
    assert [(i.line, i.column, i.message) for i in raised.value.issues] == [
        (3, 17, f"allowed_images: expected a list of image prefixes, got {named}")]
