"""The policy keys `on_failure` and `watch`: their values, defaults and errors with positions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.domain.policy import PolicyError, load_policy

HEAD = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
environments:
  - name: staging
    path: apps/{service}/staging.yaml
"""  # lines 1-9


def issues_of(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(PolicyError) as caught:
        load_policy(text)
    return [(i.line, i.column, i.message) for i in caught.value.issues]


def test_defaults_are_no_action_and_one_hour() -> None:
    env = load_policy(HEAD).environments["staging"]
    assert env.on_failure is None
    assert env.watch == timedelta(hours=1)


def test_rollback_with_its_own_reports_on_a_gated_environment() -> None:
    policy = load_policy(HEAD + "    on_failure: rollback\n    watch: 90m\n"
                         "    deployed_context: argocd/{service}-{env}\n"
                         '    deployed_by: ["argocd[bot]"]\n'
                         "  - name: production\n    path: p/{service}.yaml\n    after: staging\n"
                         "    on_failure: hold\n    deployed_context: argocd/{service}-{env}\n")
    staging, production = policy.environments["staging"], policy.environments["production"]
    assert (staging.on_failure, staging.watch) == ("rollback", timedelta(minutes=90))
    # merged evidence only: deployed_context is allowed because on_failure reads it
    assert (production.on_failure, production.evidence) == ("hold", ("merged",))
    assert production.deployed_context == "argocd/{service}-{env}"


@pytest.mark.parametrize(("lines", "expected"), [
    ("    on_failure: revert\n",
     [(10, 17, "environments[0].on_failure: must be one of rollback, hold, not 'revert'")]),
    ("    on_failure: rolback\n",
     [(10, 17, "environments[0].on_failure: must be one of rollback, hold, not 'rolback' "
               "(did you mean 'rollback'?)")]),
    ("    watch: 1 hour\n",
     [(10, 12, "environments[0].watch: invalid duration '1 hour': use 0 or a number with units "
               "d, h, m, s in that order, such as 45s, 30m, 1h30m or 2d")]),
    ("    watch: 0\n",
     [(10, 12, "environments[0].watch: must be longer than 0; a failure report counts only "
               "within watch of the merge")]),
    ("    watch: 60\n",
     [(10, 12, "environments[0].watch: expected a duration such as 30m, got integer")]),
])
def test_errors_name_the_line(lines: str, expected: list[tuple[int, int, str]]) -> None:
    assert issues_of(HEAD + lines) == expected


def test_on_failure_without_deployed_by_is_a_notice() -> None:
    policy = load_policy(HEAD + "    on_failure: rollback\n")
    assert [(n.line, n.message) for n in policy.notices] == [
        (10, "environments[0].on_failure: a failure report by anyone who can post commit "
             "statuses or deployments counts; name your Argo CD or Flux login in deployed_by")]
