"""`services.<name>.chart`: a Helm chart in an OCI registry as the alternative to an image."""

from __future__ import annotations

import pytest

from bot.domain.policy import PolicyError, load_policy

HEAD = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
environments:
  - name: staging
    path: deploy/{service}.yaml
services:
"""  # lines 1-6; services from line 7 on


def issues_of(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(PolicyError) as caught:
        load_policy(text)
    return [(i.line, i.column, i.message) for i in caught.value.issues]


def test_a_chart_service_loads() -> None:
    policy = load_policy(HEAD + "  web-chart:\n    chart: ghcr.io/acme/charts/web\n"
                                "    source: acme/web\n    tags: \"semver:^1\"\n")
    service = policy.services["web-chart"]
    assert (service.kind, service.image, service.is_chart) == (
        "chart", "ghcr.io/acme/charts/web", True)
    assert not load_policy(HEAD + "  web:\n    image: ghcr.io/acme/web\n"
                                  "    source: acme/web\n").services["web"].is_chart


@pytest.mark.parametrize(("case", "service", "expected"), [
    ("both image and chart",
     "  web:\n    image: ghcr.io/acme/web\n    chart: ghcr.io/acme/charts/web\n"
     "    source: acme/web\n",
     [(9, 5, "services.web.chart: a service ships an image or a Helm chart, not both; keep "
             "one of image and chart")]),
    ("neither",
     "  web:\n    source: acme/web\n",
     [(8, 5, "services.web: missing required key 'image' (or 'chart' for a Helm chart)")]),
    ("written with oci://",
     "  web:\n    chart: oci://ghcr.io/acme/charts/web\n    source: acme/web\n",
     [(8, 12, "services.web.chart: write the chart without oci://, such as "
              "ghcr.io/acme/charts/web")]),
    ("outside allowed_images",
     "  web:\n    chart: quay.io/acme/charts/web\n    source: acme/web\n",
     [(8, 12, "services.web.chart: 'quay.io/acme/charts/web' is not under any prefix of "
              "allowed_images (ghcr.io/acme/); add its prefix there or fix the name")]),
    ("with a version in it",
     "  web:\n    chart: ghcr.io/acme/charts/web:1.4.2\n    source: acme/web\n",
     [(8, 12, "services.web.chart: chart 'ghcr.io/acme/charts/web:1.4.2' must be a name "
              "without tag or digest, such as ghcr.io/acme/web")]),
    ("a tag_key on a chart",
     "  web:\n    chart: ghcr.io/acme/charts/web\n    source: acme/web\n    tag_key: version\n",
     [(10, 5, "services.web.tag_key: only applies to images; a chart's version is written "
              "where the chart is named")]),
    ("the same chart twice",
     "  web:\n    chart: ghcr.io/acme/charts/web\n    source: acme/web\n"
     "  web2:\n    chart: ghcr.io/acme/charts/web\n    source: acme/web\n",
     [(11, 12, "services.web2.chart: 'ghcr.io/acme/charts/web' is already the chart of "
               "service 'web'")]),
])
def test_chart_errors(case: str, service: str, expected: list[tuple[int, int, str]]) -> None:
    assert issues_of(HEAD + service) == expected, case
