"""Loading valid policies: the documented example, defaults and the model's queries."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.domain.freeze import parse_freeze
from bot.domain.policy import Policy, check_config_file, load_policy
from bot.domain.tags import TagPolicy

EXAMPLE = """\
version: 1
allowed_images: ["ghcr.io/acme/"]          # prefixes a promotion may write; others are refused
services:
  web:
    image: ghcr.io/acme/web                 # image name as written in the manifests
    source: acme/web                        # the only repo whose releases/packages feed it
    tags: "semver:^1.4"                     # "semver:<range>" | "regexp:<pattern>" | "any"
    paths:                                  # optional per-environment override
      production: deploy/prod/web-values.yaml
environments:
  - name: staging
    path: apps/{service}/overlays/staging/kustomization.yaml
    from: release                           # entry environment
    auto_merge: true                        # Conveyor merges its own PR
  - name: production
    path: apps/{service}/overlays/prod/kustomization.yaml
    after: staging                          # gated: needs evidence from this upstream
    promote: manual                         # "manual" (/promote) | "auto"
    evidence: [merged, deployed]            # see section 6
    soak: 30m                               # 0, 45s, 30m, 1h30m, 2d
    tags: "semver:~1.4"                     # optional: this environment admits only these
    approvals: 1                            # approving reviews required on the promotion PR
    approvers: ["@acme/sre", "alice"]       # users and @org/team slugs
    allow_self_approval: false
    deployed_context: argocd/staging        # optional: the context reporting the deployment
    freeze: ["Fri 16:00 - Mon 08:00 Europe/Berlin"]   # optional
    merge_method: squash                    # squash | merge | rebase
"""

MINIMAL = """\
version: 1
allowed_images: [ghcr.io/acme]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
  api:
    image: ghcr.io/acme/api
    source: Acme/API
environments:
  - name: dev
    path: "{env}/{service}.yaml"
  - name: qa
    path: "{env}/{service}.yaml"
    after: dev
  - name: prod
    path: "{env}/{service}.yaml"
    after: qa
  - name: canary
    path: "{env}/{service}.yaml"
    from: package
  - name: demo
    path: "{env}/{service}.yaml"
    after: dev
"""


@pytest.fixture
def spec_policy() -> Policy:
    return load_policy(EXAMPLE)


def test_spec_example_loads(spec_policy: Policy) -> None:
    assert spec_policy.version == 1
    assert spec_policy.allowed_images == ("ghcr.io/acme/",)
    web = spec_policy.services["web"]
    assert (web.name, web.image, web.source, web.line) == ("web", "ghcr.io/acme/web", "acme/web", 4)
    assert web.tags == TagPolicy.parse("semver:^1.4")
    assert dict(web.paths) == {"production": "deploy/prod/web-values.yaml"}
    assert list(spec_policy.environments) == ["staging", "production"]
    staging = spec_policy.environments["staging"]
    assert (staging.entry_from, staging.auto_merge, staging.gated, staging.line) == (
        "release",
        True,
        False,
        11,
    )
    prod = spec_policy.environments["production"]
    assert prod.gated
    assert prod.after == ("staging",)
    assert prod.entry_from is None
    assert prod.promote == "manual"
    assert prod.evidence == ("merged", "deployed")
    assert prod.soak == timedelta(minutes=30)
    assert str(prod.tags) == "semver:~1.4"
    assert prod.approvals == 1
    assert prod.approvers == ("@acme/sre", "alice")
    assert prod.allow_self_approval is False
    assert prod.deployed_context == "argocd/staging"
    assert prod.freeze == (parse_freeze("Fri 16:00 - Mon 08:00 Europe/Berlin"),)
    assert prod.merge_method == "squash"
    assert prod.require_attestation is False
    assert prod.line == 15


def test_defaults() -> None:
    policy = load_policy(MINIMAL)
    web = policy.services["web"]
    assert str(web.tags) == "semver:*"
    assert dict(web.paths) == {}
    assert web.tag_key is None
    dev, qa = policy.environments["dev"], policy.environments["qa"]
    assert dev.entry_from == "any"
    assert dev.evidence == ()
    assert qa.entry_from is None
    assert qa.evidence == ("merged",)
    for env in (dev, qa):
        assert env.promote == "manual"
        assert env.soak == timedelta(0)
        assert env.tags is None
        assert env.approvals == 0
        assert env.approvers == ()
        assert env.allow_self_approval is False
        assert env.auto_merge is False
        assert env.merge_method == "squash"
        assert env.freeze == ()
        assert env.deployed_context is None
        assert env.require_attestation is False


def test_path_for_uses_override_then_template(spec_policy: Policy) -> None:
    assert spec_policy.path_for("web", "production") == "deploy/prod/web-values.yaml"
    assert spec_policy.path_for("web", "staging") == "apps/web/overlays/staging/kustomization.yaml"
    assert load_policy(MINIMAL).path_for("api", "qa") == "qa/api.yaml"


def test_entry_environments() -> None:
    policy = load_policy(MINIMAL)
    assert [e.name for e in policy.entry_environments("release")] == ["dev"]
    assert [e.name for e in policy.entry_environments("package")] == ["dev", "canary"]
    with pytest.raises(ValueError, match="event kind"):
        policy.entry_environments("push")


def test_downstream_of() -> None:
    policy = load_policy(MINIMAL)
    assert [e.name for e in policy.downstream_of("dev")] == ["qa", "demo"]
    assert [e.name for e in policy.downstream_of("qa")] == ["prod"]
    assert policy.downstream_of("prod") == []


def test_services_for_source_are_case_insensitive() -> None:
    policy = load_policy(MINIMAL)
    assert [s.name for s in policy.services_for_source("acme/api")] == ["api"]
    assert [s.name for s in policy.services_for_source("ACME/WEB")] == ["web"]
    assert policy.services_for_source("acme/other") == []


def test_tag_policy_for(spec_policy: Policy) -> None:
    assert [str(p) for p in spec_policy.tag_policy_for("web", "production")] == [
        "semver:^1.4",
        "semver:~1.4",
    ]
    assert [str(p) for p in spec_policy.tag_policy_for("web", "staging")] == ["semver:^1.4"]


def test_environment_for_path(spec_policy: Policy) -> None:
    pairs = spec_policy.environment_for_path("deploy/prod/web-values.yaml")
    assert [(s.name, e.name) for s, e in pairs] == [("web", "production")]
    pairs = spec_policy.environment_for_path("./apps/web/overlays/staging/kustomization.yaml")
    assert [(s.name, e.name) for s, e in pairs] == [("web", "staging")]
    # the template's production path is overridden, so it belongs to nobody
    assert spec_policy.environment_for_path("apps/web/overlays/prod/kustomization.yaml") == []


def test_shared_file_belongs_to_every_pair() -> None:
    text = MINIMAL.replace('"{env}/{service}.yaml"', '"{env}/images.yaml"')
    pairs = load_policy(text).environment_for_path("qa/images.yaml")
    assert [(s.name, e.name) for s, e in pairs] == [("web", "qa"), ("api", "qa")]


def test_prefix_without_slash_covers_whole_components_only() -> None:
    text = MINIMAL.replace("image: ghcr.io/acme/api", "image: ghcr.io/acme-evil/api")
    with pytest.raises(Exception, match="not under any prefix"):
        load_policy(text)


def test_optional_keys_accepted() -> None:
    text = MINIMAL.replace(
        "    after: qa\n",
        "    after: qa\n    require_attestation: true\n    promote: auto\n    soak: 0\n"
        "    evidence: [deployed]\n    deployed_context: argocd/qa\n    auto_merge: true\n"
        "    merge_method: rebase\n    tags: any\n"
        '    freeze: ["2026-12-20 - 2027-01-04", "Sat 00:00 - Mon 00:00 UTC"]\n',
    )
    prod = load_policy(text).environments["prod"]
    assert prod.require_attestation and prod.auto_merge
    assert (prod.promote, prod.merge_method, prod.soak) == ("auto", "rebase", timedelta(0))
    assert prod.evidence == ("deployed",)
    assert prod.deployed_context == "argocd/qa"
    assert str(prod.tags) == "any"
    assert [str(w) for w in prod.freeze] == ["2026-12-20 - 2027-01-04", "Sat 00:00 - Mon 00:00 UTC"]


def test_policy_is_immutable(spec_policy: Policy) -> None:
    with pytest.raises(AttributeError):
        spec_policy.version = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec_policy.services["x"] = spec_policy.services["web"]  # type: ignore[index]


def test_check_config_file(tmp_path: Path) -> None:
    good = tmp_path / "conveyor.yml"
    good.write_text(EXAMPLE)
    policy, issues = check_config_file(str(good))
    assert policy is not None and issues == []

    bad = tmp_path / "bad.yml"
    bad.write_text(EXAMPLE.replace("after: staging", "after: stagin"))
    policy, issues = check_config_file(str(bad))
    assert policy is None
    assert [str(i) for i in issues] == [
        f"{bad}:17:12: environments[1].after: unknown environment 'stagin' "
        "(did you mean 'staging'?)"
    ]

    binary = tmp_path / "binary.yml"
    binary.write_bytes(b"version: 1\nservices: \xff\n")
    assert [str(i) for i in check_config_file(str(binary))[1]] == [
        f"{binary}:2:11: the file is not valid UTF-8"
    ]

    missing = tmp_path / "missing.yml"
    _, issues = check_config_file(str(missing))
    assert [(i.line, i.column) for i in issues] == [(1, 1)]
    assert issues[0].message.startswith("cannot read the file")


def test_five_hundred_services_load() -> None:
    services = "".join(
        f"  svc{i}:\n    image: ghcr.io/acme/svc{i}\n    source: acme/svc{i}\n"
        f'    tags: "semver:^{i % 7}.{i % 3}"\n'
        for i in range(500)
    )
    text = EXAMPLE.replace(
        EXAMPLE[EXAMPLE.index("  web:") : EXAMPLE.index("environments:")], services
    ).replace(
        "environments:\n",
        "environments:\n  - name: dev\n    path: dev/{service}.yaml\n"
        "  - name: qa\n    path: qa/{service}.yaml\n    after: dev\n",
    )
    policy = load_policy(text)
    assert len(policy.services) == 500
    assert len(policy.environments) == 4
    assert policy.environment_for_path("qa/svc42.yaml")[0][0].name == "svc42"


def test_anchors_and_merge_keys() -> None:
    text = """\
version: 1
allowed_images: [ghcr.io/acme/]
services:
  web: {image: ghcr.io/acme/web, source: acme/web}
environments:
  - &gated
    name: staging
    path: s/{service}.yaml
  - <<: *gated
    name: production
    path: p/{service}.yaml
    after: staging
"""
    policy = load_policy(text)
    assert policy.environments["production"].after == ("staging",)
    assert policy.path_for("web", "production") == "p/web.yaml"


def test_tag_key_names_the_charts_tag_key() -> None:
    text = MINIMAL.replace("source: acme/web\n", "source: acme/web\n    tag_key: imageTag\n")
    assert load_policy(text).services["web"].tag_key == "imageTag"


def test_documented_example_loads() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "policy.md"
    text = docs.read_text()
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    policy = load_policy(example)
    assert list(policy.services) == ["web", "api"]
    assert policy.services["api"].tags.admits("api-v1.2.3")
    assert not policy.services["api"].tags.admits("worker-v1.2.3")
    assert policy.environments["production"].require_attestation


def test_groups_in_both_forms() -> None:
    text = MINIMAL + (
        "groups:\n"
        "  storefront: [web, api]\n"
        "  checkout:\n"
        "    services: [api]\n"
        "    together: true\n"
    )
    policy = load_policy(text)
    assert list(policy.groups) == ["storefront", "checkout"]
    storefront, checkout = policy.groups["storefront"], policy.groups["checkout"]
    assert (storefront.services, storefront.together) == (("web", "api"), False)
    assert storefront.line == 26
    assert (checkout.services, checkout.together, checkout.line) == (("api",), True, 27)
    assert [g.name for g in policy.groups_of("api")] == ["storefront", "checkout"]
    assert policy.together_group_of("api") == checkout
    assert policy.together_group_of("web") is None


def test_groups_default_to_none() -> None:
    policy = load_policy(MINIMAL)
    assert dict(policy.groups) == {}
    assert policy.groups_of("web") == []
