"""Deployment reports as evidence, as pure logic: policy keys, context patterns, trust, and
which report wins."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.domain.deployed import (
    Report,
    Trust,
    check_run_state,
    context_pattern,
    deployment_state,
    fill_context,
    judge,
    may_match,
)
from bot.domain.policy import PolicyError, load_policy

POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
environments:
  - name: staging
    path: apps/{service}/staging.yaml
  - name: production
    path: apps/{service}/prod.yaml
    after: staging
    evidence: [merged, deployed]
"""  # lines 1-13
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def errors(text: str) -> list[tuple[int, int, str]]:
    with pytest.raises(PolicyError) as caught:
        load_policy(textwrap.dedent(text))
    return [(i.line, i.column, i.message) for i in caught.value.issues]


def report(state: str, minutes: int, reporter: str = "argocd[bot]", *, kind: str = "status",
           app_id: int | None = None) -> Report:
    return Report(kind=kind, name="argocd/web-staging", state=state,  # type: ignore[arg-type]
                  at=T0 + timedelta(minutes=minutes), reporter=reporter, sha="a" * 40, url="",
                  app_id=app_id)


TRUST = Trust(("argocd[bot]",), "conveyor[bot]", 7)


# -- the policy keys -------------------------------------------------------------------------
def test_patterns_and_reporters_are_read() -> None:
    policy = load_policy(POLICY + "    deployed_context: kustomization/{service}-{env}/*\n"
                         "    deployed_by: [flux-bot, \"argocd-notifications[bot]\"]\n")
    prod = policy.environments["production"]
    assert prod.deployed_context == "kustomization/{service}-{env}/*"
    assert prod.deployed_by == ("flux-bot", "argocd-notifications[bot]")
    assert policy.notices == ()


def test_an_unknown_placeholder_is_an_error_with_its_line() -> None:
    assert errors(POLICY + "    deployed_context: argocd/{app}-{env}\n") == [(
        14, 23, "environments[1].deployed_context: unknown placeholder {app} in "
        "'argocd/{app}-{env}': only {service}, {env} and * are allowed")]
    assert errors(POLICY + "    deployed_context: argocd/{service\n")[0][:2] == (14, 23)


def test_reporters_are_logins_or_apps() -> None:
    assert errors(POLICY + "    deployed_by: [argo cd, flux-bot, Flux-Bot]\n") == [
        (14, 19, "environments[1].deployed_by: invalid login 'argo cd': a GitHub user login, "
         "or an app as <app-slug>[bot] (such as argocd-notifications[bot])"),
        (14, 38, "environments[1].deployed_by: 'Flux-Bot' is listed twice"),
    ]
    assert errors(POLICY + "    deployed_by: []\n") == [
        (14, 18, "environments[1].deployed_by: list at least one login, or leave deployed_by "
         "out")]


def test_entry_environments_may_name_their_own_reports() -> None:
    policy = load_policy(POLICY.replace(
        "    path: apps/{service}/staging.yaml\n",
        "    path: apps/{service}/staging.yaml\n    deployed_context: argocd/{service}-{env}\n"
        "    deployed_by: [\"argocd[bot]\"]\n"))
    assert policy.environments["staging"].deployed_by == ("argocd[bot]",)


def test_deployed_evidence_without_reporters_gets_a_notice(tmp_path: Path) -> None:
    policy = load_policy(POLICY)
    assert [(n.line, n.column) for n in policy.notices] == [(13, 5)]
    assert "deployed_by" in policy.notices[0].message
    path = tmp_path / "conveyor.yml"
    path.write_text(POLICY)
    done = subprocess.run([sys.executable, "-m", "bot", "check-config", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{path}:13:5: notice: environments[1].evidence: deployed evidence counts" in \
        done.stdout


# -- patterns ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("template", "name", "matches"), [
    ("argocd/{service}-{env}", "argocd/web-staging", True),
    ("argocd/{service}-{env}", "argocd/api-staging", False),
    ("argocd/{service}-{env}", "argocd/web-staging-2", False),
    ("kustomization/{service}-{env}/*", "kustomization/web-staging/0c9c2e41", True),
    ("kustomization/{service}-{env}/*", "kustomization/web-staging/", False),
    ("kustomization/{service}-{env}/*", "kustomization/web-staging/a/b", False),
    ("kustomization/{service}-{env}/*", "kustomization/web-staging-canary/0c9c2e41", False),
    ("deploy (web.*)", "deploy (webXstaging)", False),  # regex characters are literal
    ("{{{service}}}", "{web}", True),
])
def test_context_patterns(template: str, name: str, matches: bool) -> None:
    assert (context_pattern(template, "web", "staging").fullmatch(name) is not None) is matches


def test_webhook_prefilter_and_sandbox_fill() -> None:
    assert may_match("status", "argocd/{service}-{env}", "staging", "argocd/worker-staging")
    assert not may_match("status", "argocd/{service}-{env}", "staging", "argocd/web-prod")
    assert may_match("deployment", None, "staging", "staging")
    assert not may_match("status", None, "staging", "staging")
    assert fill_context("kustomization/{service}-{env}/*", "web", "staging") == \
        "kustomization/web-staging/sandbox"


# -- trust and the newest report --------------------------------------------------------------
def test_conveyor_and_strangers_never_count() -> None:
    assert TRUST.refusal(report("success", 0)) is None
    assert TRUST.refusal(report("success", 0, "ARGOCD[bot]")) is None
    assert TRUST.refusal(report("success", 0, "alice")) == "not in deployed_by"
    assert TRUST.refusal(report("success", 0, "conveyor[bot]")) == "Conveyor's own report"
    # a check run or deployment by Conveyor's app, whatever login it shows
    assert TRUST.refusal(report("success", 0, "renamed[bot]", app_id=7)) == \
        "Conveyor's own report"
    anyone = Trust((), "conveyor[bot]", 7)
    assert anyone.refusal(report("success", 0, "alice")) is None
    assert anyone.refusal(report("success", 0, "conveyor[bot]")) is not None


def test_the_newest_final_report_wins() -> None:
    found = judge([report("success", 0), report("success", 10)], TRUST)
    assert found.evidence is not None and found.evidence.at == T0  # the soak runs from 10:00
    found = judge([report("success", 0), report("failure", 10)], TRUST)
    assert found.evidence is None and found.latest is not None
    assert found.notes() == ("the latest report is a failure: status argocd/web-staging "
                             "failure on aaaaaaa by argocd[bot]",)
    found = judge([report("success", 0), report("error", 10), report("success", 20),
                   report("pending", 30)], TRUST)
    assert found.evidence is not None and found.evidence.at == T0 + timedelta(minutes=20)


def test_ignored_reports_are_named_newest_first() -> None:
    found = judge([report("success", 0, "alice"), report("failure", 5, "mallory"),
                   report("success", 9, "conveyor[bot]")], TRUST)
    assert found.evidence is None and found.latest is None
    assert found.notes() == (
        "ignored: status argocd/web-staging success on aaaaaaa by conveyor[bot] (Conveyor's "
        "own report); status argocd/web-staging failure on aaaaaaa by mallory (not in "
        "deployed_by); status argocd/web-staging success on aaaaaaa by alice (not in "
        "deployed_by)",)
    many = judge([report("success", m, "alice") for m in range(8)], TRUST)
    assert many.notes()[0].endswith("; and 3 more")


@pytest.mark.parametrize(("status", "conclusion", "state"), [
    ("completed", "success", "success"),
    ("completed", "failure", "failure"),
    ("completed", "timed_out", "failure"),
    ("completed", "neutral", "pending"),
    ("in_progress", None, "pending"),
])
def test_check_run_states(status: str, conclusion: str | None, state: str) -> None:
    assert check_run_state(status, conclusion) == state


def test_deployment_states() -> None:
    assert [deployment_state(s) for s in ("success", "failure", "error", "inactive",
                                          "in_progress", "queued")] == \
        ["success", "failure", "error", "pending", "pending", "pending"]
