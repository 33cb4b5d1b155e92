"""What a policy change changes for each gated environment (pure)."""

from __future__ import annotations

from bot.domain.policy import load_policy
from bot.domain.policy.changes import gated_rule_changes

BASE = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
    tags: "semver:^1"
environments:
  - name: staging
    path: apps/{service}/staging.yaml
    auto_merge: true
  - name: production
    path: apps/{service}/prod.yaml
    after: staging
    evidence: [merged, deployed]
    deployed_context: argocd/{service}-staging
    deployed_by: ["argocd-notifications[bot]"]
    soak: 30m
    approvals: 1
    approvers: ["@acme/sre"]
    freeze: ["Fri 16:00 - Mon 08:00 Europe/Berlin"]
"""


def changes(head: str, base: str = BASE) -> list[str]:
    return [f"{c.environment} | {c.text}"
            for c in gated_rule_changes(load_policy(base), load_policy(head))]


def test_loosening_production_lists_every_rule_it_changes() -> None:
    head = (BASE.replace("    evidence: [merged, deployed]\n", "    evidence: [merged]\n")
            .replace("    approvals: 1\n", "    approvals: 0\n")
            .replace('    approvers: ["@acme/sre"]\n', "")
            .replace("    deployed_context: argocd/{service}-staging\n", "")
            .replace("    soak: 30m\n", "")
            .replace('    deployed_by: ["argocd-notifications[bot]"]\n', "")
            .replace('    freeze: ["Fri 16:00 - Mon 08:00 Europe/Berlin"]\n', ""))
    assert changes(head) == [
        "production | evidence: merged, deployed → merged",
        "production | soak: 30m → 0s",
        "production | approvals: 1 → 0",
        "production | approvers: @acme/sre → none",
        "production | deployed_context: argocd/{service}-staging → not set",
        "production | freeze: Fri 16:00 - Mon 08:00 Europe/Berlin → none",
        "production | deployed_by: argocd-notifications[bot] → none",
    ]


def test_reordering_comments_and_quoting_change_nothing() -> None:
    head = BASE.replace('allowed_images: ["ghcr.io/acme/"]\n',
                        "# where images come from\nallowed_images:\n  - 'ghcr.io/acme/'\n")
    head = head.replace("    soak: 30m\n    approvals: 1\n", "    approvals: 1  # sre\n"
                        "    soak: 30m\n")
    assert changes(head) == []


def test_a_staging_only_change_touches_no_gated_environment() -> None:
    assert changes(BASE.replace("    auto_merge: true\n", "")) == []


def test_services_images_paths_and_removals_count_for_the_gated_environment() -> None:
    head = (BASE.replace('allowed_images: ["ghcr.io/acme/"]', 'allowed_images: ["ghcr.io/"]')
            .replace('    tags: "semver:^1"\n',
                     '    tags: "any"\n    paths: {production: apps/other/prod.yaml}\n'))
    head = head.replace("environments:\n", "  api:\n    image: ghcr.io/acme/api\n"
                        "    source: evil/api\nenvironments:\n")
    assert changes(head) == [
        "production | services.web.tags: semver:^1 → any",
        "production | services.web file: apps/web/prod.yaml → apps/other/prod.yaml",
        "production | service api: absent → added (image ghcr.io/acme/api from evil/api, "
        "file apps/api/prod.yaml)",
        "production | allowed_images: ghcr.io/acme/ → ghcr.io/",
    ]
    renamed = BASE.replace("  - name: production\n", "  - name: prod\n")
    assert changes(renamed) == ["production | environment: defined → renamed to prod"]
    ungated = BASE[:BASE.index("    after: staging\n")]
    assert changes(ungated) == [
        "production | from: not set → any",
        "production | after: staging → none",
        "production | evidence: merged, deployed → none",
        "production | soak: 30m → 0s",
        "production | approvals: 1 → 0",
        "production | approvers: @acme/sre → none",
        "production | deployed_context: argocd/{service}-staging → not set",
        "production | freeze: Fri 16:00 - Mon 08:00 Europe/Berlin → none",
        "production | deployed_by: argocd-notifications[bot] → none",
    ]
