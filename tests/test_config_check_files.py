"""The checks of one file that need nothing but the file: the policy's own errors, Helm
templates left for later, and a manifest the image finder cannot read."""

from __future__ import annotations

from bot.configcheck.files import check_file, image_findings
from bot.domain.policy import load_policy
from bot.names import POLICY_PATH
from bot.sandbox.demo import DEMO_POLICY
from tests.registry.test_chart_flow import OCI_REPOSITORY, PRODUCTION
from tests.registry.test_chart_flow import POLICY as CHARTS

POLICY = load_policy(DEMO_POLICY)
STAGING = "apps/web/overlays/staging/kustomization.yaml"


def test_the_policy_file_is_checked_as_a_policy_with_its_lines_and_columns() -> None:
    report, documents = check_file("1.31", POLICY, POLICY_PATH,
                                   "version: 1\nenvironments: 3\n")
    assert documents == [] and report.files == 1 and report.documents == 0
    assert [(f.path, f.line, f.message) for f in report.findings] == [
        (POLICY_PATH, 1, "1: missing required key 'allowed_images'"),
        (POLICY_PATH, 1, "1: missing required key 'services'"),
        (POLICY_PATH, 2, "15: environments: expected a list of environments, got integer"),
    ]
    clean, _ = check_file("1.31", POLICY, POLICY_PATH, DEMO_POLICY)
    assert clean.findings == []


def test_a_helm_template_is_noted_not_parsed() -> None:
    report, documents = check_file("1.31", POLICY, "charts/api/templates/deployment.yaml",
                                   "image: {{ .Values.image }}\n  bad: [\n")
    assert documents == [] and report.findings == []
    assert [(n.line, n.message) for n in report.notes] == [
        (1, "Helm template: checked once rendered, not here")]
    assert report.documents == 0 and report.files == 1


def test_a_file_the_image_finder_cannot_read_is_one_finding_on_its_line() -> None:
    (finding,) = image_findings(POLICY, STAGING, "images: [\n  - x\n")
    assert (finding.path, finding.line) == (STAGING, 2)
    assert finding.message.startswith("YAML does not parse:")
    assert image_findings(POLICY, "docs/notes.yaml", "images: [\n") == []  # no env owns it


def test_a_chart_named_by_version_needs_no_digest_but_an_oci_repository_does() -> None:
    policy = load_policy(CHARTS)
    path = "deploy/production/helmfile.yaml"
    assert image_findings(policy, path, PRODUCTION) == []
    (finding,) = image_findings(policy, path, OCI_REPOSITORY)
    assert finding.message == ("web-chart must be pinned by digest in production (gated by "
                               "staging): add `digest: sha256:…` under spec.ref")
