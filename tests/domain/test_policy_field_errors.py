"""More policy validation errors, each with its exact message and position: lists of evidence
and approvers, deployed contexts, environment and service entries of the wrong shape, paths
that cannot name a file in the repository."""

from __future__ import annotations

import pytest

from tests.domain.test_policy_errors import HEAD, issues_of

# HEAD and a gated production environment: lines 1-12; cases append from line 13 on
GATED = HEAD + "  - name: production\n    path: p.yaml\n    after: staging\n"
BEFORE_ENVIRONMENTS = HEAD.split("environments:")[0]
SERVICE = "services:\n  web:\n    image: ghcr.io/acme/web\n    source: acme/web\n"


def in_staging_path(path: str) -> str:
    return HEAD.replace("path: apps/{service}/staging.yaml", f"path: {path}")


CASES: list[tuple[str, str, list[tuple[int, int, str]]]] = [
    ("evidence listing nothing", GATED + "    evidence: []\n",
     [(13, 15, "environments[1].evidence: list at least one of merged, deployed")]),
    ("evidence listed twice", GATED + "    evidence: [merged, merged]\n",
     [(13, 24, "environments[1].evidence: 'merged' is listed twice")]),
    ("evidence past its length limit",
     GATED + "    evidence: [" + ", ".join(["merged"] * 8) + "]\n",
     [(13, 15, "environments[1].evidence: at most 7 entries")]),
    ("evidence that is not a string", GATED + "    evidence: [merged, 7]\n",
     [(13, 24, "environments[1].evidence[1]: expected a string, got integer")]),
    ("an approver team listed twice in another case",
     GATED + "    approvals: 1\n    approvers: ['@acme/sre', '@ACME/sre']\n",
     [(14, 30, "environments[1].approvers: '@ACME/sre' is listed twice")]),
    ("approvals that is not a number", GATED + "    approvals: many\n",
     [(13, 16, "environments[1].approvals: expected an integer, got string")]),
    ("an empty deployed_context", GATED + "    evidence: [merged, deployed]\n"
     "    deployed_context: ''\n",
     [(14, 23, "environments[1].deployed_context: must be 1 to 255 characters")]),
    ("a deployed_context past GitHub's 255 characters", GATED + "    evidence: [merged, deployed]\n"
     "    deployed_context: " + "x" * 256 + "\n",
     [(14, 23, "environments[1].deployed_context: must be 1 to 255 characters")]),
    ("a deployed_context that is not a string", GATED + "    evidence: [merged, deployed]\n"
     "    deployed_context: 7\n",
     [(14, 23, "environments[1].deployed_context: expected a string, got integer")]),
    ("promote outside its choices", GATED + "    promote: later\n",
     [(13, 14, "environments[1].promote: must be one of manual, auto, not 'later'")]),
    ("after that is not a name", HEAD + "  - name: prod\n    path: p.yaml\n    after: 7\n",
     [(12, 12, "environments[1].after: expected the name of an environment or a list of "
                "names, got integer")]),
    ("no environment", BEFORE_ENVIRONMENTS + "environments: []\n",
     [(7, 15, "environments: define at least one environment")]),
    ("an environment that is a string", BEFORE_ENVIRONMENTS + "environments: [staging]\n",
     [(7, 16, "environments[0]: expected a mapping with name and path, got string")]),
    ("an environment without a name", HEAD + "  - path: q.yaml\n",
     [(10, 5, "environments[1]: missing required key 'name'")]),
    ("a key that is not a string", HEAD + "    1: x\n",
     [(10, 5, "environments[0].1: keys must be strings")]),
    ("allowed_images that is not a list", HEAD.replace('["ghcr.io/acme/"]', "7"),
     [(2, 17, "allowed_images: expected a list of image prefixes, got integer")]),
    ("an allowed image that is not a string",
     HEAD.replace('"ghcr.io/acme/"]', '"ghcr.io/acme/", 7]'),
     [(2, 35, "allowed_images[1]: expected a string, got integer")]),
    ("no service", HEAD.replace(SERVICE, "services: {}\n"),
     [(3, 11, "services: define at least one service")]),
    ("a service that is a string", HEAD.replace("environments:", "  api: ghcr.io/acme/api\n"
                                                                  "environments:"),
     [(7, 8, "services.api: expected a mapping with image and source, got string")]),
    ("a service named again in another case",
     HEAD.replace("environments:", "  WEB:\n    image: ghcr.io/acme/web2\n    source: acme/web\n"
                                   "environments:"),
     [(7, 3, "services.WEB: duplicate service (differs from 'web' only in case)")]),
    ("an image that is not a string", HEAD.replace("image: ghcr.io/acme/web", "image: 7"),
     [(5, 12, "services.web.image: expected an image name such as ghcr.io/acme/web, got "
              "integer")]),
    ("tags that is not a string",
     HEAD.replace("    source: acme/web\n", "    source: acme/web\n    tags: 7\n"),
     [(7, 11, 'services.web.tags: expected a tag policy string such as "semver:^1.4", got '
              "integer")]),
    ("a service path that is not a string",
     HEAD.replace("    source: acme/web\n", "    source: acme/web\n    paths:\n      staging: 7\n"),
     [(8, 16, "services.web.paths.staging: expected a path, got integer")]),
    ("an empty path", in_staging_path("''"),
     [(9, 11, "environments[0].path: path is empty")]),
    ("a path with a NUL", in_staging_path('"apps/\\0x.yaml"'),
     [(9, 11, "environments[0].path: path 'apps/\\x00x.yaml' contains a NUL character")]),
    ("a path with a tab", in_staging_path('"apps/\\tx.yaml"'),
     [(9, 11, "environments[0].path: path 'apps/\\tx.yaml' contains a control character")]),
    ("a path past 1024 characters", in_staging_path("a/" * 520 + "x.yaml"),
     [(9, 11, "environments[0].path: path is longer than 1024 characters")]),
    ("a path with a '.' segment", in_staging_path("apps/./x.yaml"),
     [(9, 11, "environments[0].path: path 'apps/./x.yaml' has an empty or '.' segment: write "
              "it as a/b/file.yaml")]),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in CASES],
                         ids=[name for name, _, _ in CASES])
def test_policy_error(text: str, expected: list[tuple[int, int, str]]) -> None:
    assert issues_of(text) == expected
