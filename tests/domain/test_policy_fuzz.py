"""A broken policy must never raise anything but PolicyError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.domain.policy import Policy, PolicyError, load_policy

VALID = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
    tags: "semver:^1.4"
    paths:
      production: deploy/prod/web-values.yaml
environments:
  - name: staging
    path: apps/{service}/overlays/staging/kustomization.yaml
    from: release
    auto_merge: true
  - name: production
    path: apps/{service}/overlays/prod/kustomization.yaml
    after: staging
    evidence: [merged, deployed]
    soak: 30m
    tags: "semver:~1.4"
    approvals: 1
    approvers: ["@acme/sre", "alice"]
    deployed_context: argocd/staging
    freeze: ["Fri 16:00 - Mon 08:00 Europe/Berlin", "2026-12-20 - 2027-01-04"]
"""

FRAGMENTS = st.sampled_from(
    [
        "",
        " ",
        ":",
        "- ",
        "[",
        "]",
        "{",
        "}",
        "&a ",
        "*a",
        "<<: *a",
        "!!str ",
        "!x ",
        "'",
        '"',
        "\n",
        "\t",
        "~",
        "0",
        "-1",
        "1.5",
        "true",
        "{service}",
        "{x}",
        "..",
        "/",
        "\\",
        "\x00",
        "after: production",
        "from: any",
        "tags: regexp:(a+)+",
        "soak: 99d",
        "approvals: 99",
        "name: staging",
        "- name: qa",
        "#",
        "---",
        "?",
        "@",
        "%",
        "ß",
        "v1.2.3",
    ]
)


def _check(text: str) -> None:
    try:
        assert isinstance(load_policy(text), Policy)
    except PolicyError as exc:
        assert exc.issues
        for issue in exc.issues:
            assert issue.line >= 1 and issue.column >= 1 and issue.message


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(st.integers(0, len(VALID)), st.integers(0, 40), FRAGMENTS)
def test_mutated_policy_never_crashes(position: int, cut: int, fragment: str) -> None:
    _check(VALID[:position] + fragment + VALID[position + cut :])


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    _check(text)


def test_odd_numbers_are_text() -> None:
    _check("-_")
    _check("._")
    _check("a: !!int x\n")
