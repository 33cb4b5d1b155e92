"""`bump` and `check-config --repo` on the places images live besides overlays: an Argo CD
Application and a chart whose tag key is `version` (the same bot/manifests/api.py the bot's
promotions and its config check use)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.bump import bump
from bot.cli.offline import check_config

DIGEST = "sha256:" + "5a" * 32
POLICY = """\
version: 1
allowed_images: ["ghcr.io/acme/"]
services:
  web:
    image: ghcr.io/acme/web
    source: acme/web
  api:
    image: ghcr.io/acme/api
    source: acme/api
    tag_key: version
environments:
  - name: staging
    path: argocd/{service}-staging.yaml
"""
APPLICATION = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web-staging
spec:
  source:
    repoURL: https://github.com/acme/deploy.git
    path: apps/web
    kustomize:
      images:
        - web=ghcr.io/acme/web:1.4.1  # the overlay's placeholder name
"""
VALUES = """\
apiVersion: argoproj.io/v1alpha1\r
kind: Application\r
spec:\r
  source:\r
    helm:\r
      valuesObject:\r
        image:\r
          repository: ghcr.io/acme/api\r
          version: 2.0.0\r
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "conveyor.yml").write_text(POLICY)
    (tmp_path / "argocd").mkdir()
    (tmp_path / "argocd" / "web-staging.yaml").write_text(APPLICATION)
    (tmp_path / "argocd" / "api-staging.yaml").write_bytes(VALUES.encode())
    return tmp_path


def test_bump_edits_an_argocd_application(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = bump(str(repo), "web", "staging", f"ghcr.io/acme/web:1.4.2@{DIGEST}", write=True)
    assert code == 0
    assert f"+        - web=ghcr.io/acme/web:1.4.2@{DIGEST}  #" in capsys.readouterr().out
    assert (repo / "argocd" / "web-staging.yaml").read_text() == APPLICATION.replace(
        "web:1.4.1", f"web:1.4.2@{DIGEST}")


def test_bump_uses_the_services_tag_key(repo: Path) -> None:
    assert bump(str(repo), "api", "staging", f"ghcr.io/acme/api:2.1.0@{DIGEST}", write=True) == 0
    assert (repo / "argocd" / "api-staging.yaml").read_bytes() == VALUES.replace(
        "version: 2.0.0", f"version: 2.1.0@{DIGEST}").encode()


def test_without_the_tag_key_bump_refuses_and_writes_nothing(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".github" / "conveyor.yml").write_text(POLICY.replace("    tag_key: version\n", ""))
    assert bump(str(repo), "api", "staging", f"ghcr.io/acme/api:2.1.0@{DIGEST}", write=True) == 1
    assert capsys.readouterr().err == (  # the opener's words for the same refusal
        "cannot edit argocd/api-staging.yaml:9: ghcr.io/acme/api has `version:` and no `tag:`; "
        "if the chart reads the tag from `version`, set `tag_key: version` on this service in "
        ".github/conveyor.yml\n"
    )
    assert (repo / "argocd" / "api-staging.yaml").read_bytes() == VALUES.encode()


def test_check_config_repo_accepts_an_application_and_checks_its_images(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check_config(None, str(repo)) == 0
    assert "2 file(s) for 2 service(s)" in capsys.readouterr().out
    gated = POLICY.replace("    tag_key: version\n", "") + (
        "  - name: production\n    path: argocd/{service}-production.yaml\n    after: staging\n"
    )
    (repo / ".github" / "conveyor.yml").write_text(gated)
    (repo / "argocd" / "web-production.yaml").write_text(APPLICATION)
    (repo / "argocd" / "api-production.yaml").write_text(
        VALUES.replace("\r\n", "\n").replace("2.0.0", f"2.0.0@{DIGEST}"))
    assert check_config(None, str(repo)) == 1
    refused = (
        "a promotion of api would be refused: ghcr.io/acme/api has `version:` and no `tag:`; "
        "if the chart reads the tag from `version`, set `tag_key: version` on this service in "
        ".github/conveyor.yml"
    )
    assert capsys.readouterr().out.splitlines() == [
        f"{repo}/argocd/api-production.yaml:8: {refused}",
        f"{repo}/argocd/api-staging.yaml:8: {refused}",
        f"{repo}/argocd/web-production.yaml:11: web must be pinned by digest in production "
        "(gated by staging): use TAG@sha256:…",
    ]
