"""`services.<name>.signer_workflow`: parsed into the policy, a bad one an error with its
line, and a notice where an environment requires an attestation and a service pins none."""

from __future__ import annotations

import pytest

from bot.domain.attestation import SignerWorkflow
from bot.domain.policy import PolicyError, load_policy

POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
{signer}environments:
  - name: staging
    path: apps/{{service}}/staging.yaml
  - name: production
    path: apps/{{service}}/prod.yaml
    after: staging
{require}"""


def policy(signer: str = "", require: bool = False) -> str:
    return POLICY.format(signer=f"    signer_workflow: {signer}\n" if signer else "",
                         require="    require_attestation: true\n" if require else "")


def test_a_pinned_signer_is_in_the_policy_and_needs_no_notice() -> None:
    loaded = load_policy(policy(".github/workflows/release.yml@refs/tags/*", require=True))
    assert loaded.services["web"].signer_workflow == SignerWorkflow(
        ".github/workflows/release.yml", ref="refs/tags/*")
    assert loaded.notices == ()


def test_requiring_an_attestation_without_a_signer_is_a_notice() -> None:
    loaded = load_policy(policy(require=True))
    assert loaded.services["web"].signer_workflow is None
    [notice] = loaded.notices
    assert (notice.line, notice.column) == (6, 5)
    assert notice.message == (
        "services.web: production requires an attestation, and without signer_workflow one "
        "signed by any workflow of acme/web counts (a pull request's too); pin the release "
        "workflow, such as signer_workflow: .github/workflows/release.yml")
    assert load_policy(policy()).notices == ()


@pytest.mark.parametrize(("value", "message"), [
    ("release.yml", "services.web.signer_workflow: expected a workflow file such as"),
    (".github/workflows/release.yml@v2", "services.web.signer_workflow: '@v2' is not how"),
    ("[1]", "services.web.signer_workflow: expected a workflow file such as "
            ".github/workflows/release.yml, got list"),
])
def test_a_signer_the_policy_may_not_write_is_an_error_on_its_line(value: str, message: str
                                                                   ) -> None:
    with pytest.raises(PolicyError) as raised:
        load_policy(policy(value))
    [issue] = raised.value.issues
    assert issue.line == 7
    assert issue.message.startswith(message), issue.message
