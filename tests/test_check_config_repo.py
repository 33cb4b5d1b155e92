"""`check-config` sees the repository: the files the policy names, checked like the check run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.registry.test_chart_flow import POLICY, PRODUCTION, STAGING
from tests.test_cli import conveyor

LAYOUTS = Path(__file__).resolve().parent / "data" / "layouts"


def copy_layout(name: str, into: Path) -> Path:
    target = into / name
    shutil.copytree(LAYOUTS / name, target)
    return target


def test_a_clean_repository_is_ok_by_default_inside_it(tmp_path: Path) -> None:
    repo = copy_layout("boutique-kustomize", tmp_path)
    done = conveyor("check-config", ".github/conveyor.yml", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == (f".github/conveyor.yml: ok; {repo}: 2 file(s) for 11 service(s) × "
                           "2 environment(s) ok\n")


def test_tag_pins_in_gated_environments_are_reported_like_the_check_run(tmp_path: Path) -> None:
    repo = copy_layout("plain-manifests", tmp_path)
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{repo}/manifests/{env}/{service}.yaml:19: {service} must be pinned by digest in "
        f"{env} (gated by {after}): use TAG@sha256:…"
        for env, after in (("production", "staging"), ("staging", "dev"))
        for service in ("billing", "orders")
    ]
    assert done.stderr == f"4 problem(s) in the files of {repo}\n"


def test_a_fan_in_names_every_upstream(tmp_path: Path) -> None:
    repo = copy_layout("plain-manifests", tmp_path)
    policy = repo / ".github" / "conveyor.yml"
    policy.write_text(policy.read_text().replace("    after: staging\n",
                                                 "    after: [dev, staging]\n"))
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1
    assert (f"{repo}/manifests/production/orders.yaml:19: orders must be pinned by digest in "
            "production (gated by dev and staging): use TAG@sha256:…") in done.stdout
    policy.write_text(policy.read_text().replace("after: [dev, staging]", "after: [dev, stage]"))
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1
    assert ("environments[2].after[1]: unknown environment 'stage' (did you mean 'staging'?)"
            in done.stdout + done.stderr)


def test_missing_files_overlays_without_images_and_bad_bytes(tmp_path: Path) -> None:
    repo = copy_layout("boutique-kustomize", tmp_path)
    overlay = repo / "kustomize/overlays/production/kustomization.yaml"
    overlay.write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                       "resources:\n  - ../../base\n  - hpa.yaml\n", encoding="utf-8")
    (repo / "kustomize/overlays/dev/kustomization.yaml").write_bytes(
        (repo / "kustomize/overlays/dev/kustomization.yaml").read_bytes()
        + "# café\n".encode("latin-1"))
    policy = repo / ".github/conveyor.yml"
    policy.write_text(policy.read_text().replace(
        "    source: boutique/adservice\n",
        "    source: boutique/adservice\n    paths:\n      production: ads/production.yaml\n"))
    done = conveyor("check-config", str(policy), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    production = f"{repo}/kustomize/overlays/production/kustomization.yaml"
    assert lines[0] == f"{repo}/ads/production.yaml:1: does not exist (the file of adservice " \
                       "in production)"
    assert lines[1].startswith(f"{repo}/kustomize/overlays/dev/kustomization.yaml:40: not valid "
                               "UTF-8 (byte 0xe9 at line 40, column 6)")
    registry = "ghcr.io/boutique"
    assert lines[2:7] == [
        f"{production}:1: does not name {registry}/cartservice, the image of service "
        "cartservice: Conveyor cannot promote it in production",
        "    add this entry under `images:` (Conveyor writes the tag and digest there):",
        "    images:",
        f"      - name: {registry}/cartservice",
        '        newTag: "0.0.0"  # the version running today',
    ]
    assert f"{production}:5: resources: 'hpa.yaml' does not exist " \
           "(kustomize/overlays/production/hpa.yaml is not in the repository at this commit)" \
        in lines
    assert sum(line.endswith("Conveyor cannot promote it in production") for line in lines) == 10
    assert any(line.startswith(f"{production}:1: the production build of "
                               "kustomize/overlays/production fails: accumulating resources")
               and "hpa.yaml: no such file or directory" in line for line in lines), lines
    assert done.stderr == f"14 problem(s) in the files of {repo}\n"


def test_every_kustomize_environment_is_built(tmp_path: Path) -> None:
    """An `images:` entry that matches no container, and a remote base, as the gate sees
    them; without kustomize, the file checks alone."""
    repo = copy_layout("boutique-kustomize", tmp_path)
    dev = repo / "kustomize/overlays/dev/kustomization.yaml"
    dev.write_text(dev.read_text().replace("  - name: frontend\n", "  - name: frontend-typo\n",
                                           1))
    production = repo / "kustomize/overlays/production/kustomization.yaml"
    production.write_text(production.read_text().replace(
        "  - ../../base\n", "  - ../../base\n  - github.com/acme/common//monitoring?ref=v1\n"))
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{dev}:1: the dev build of kustomize/overlays/dev runs no ghcr.io/boutique/frontend "
        "(service frontend): a promotion there would change no workload; does its `images:` "
        "entry name what the workloads run?",
        f"{production}:1: the production build of kustomize/overlays/production: "
        "`kustomize/overlays/production/kustomization.yaml` names the remote resource "
        "`github.com/acme/common//monitoring?ref=v1`, which Conveyor does not fetch",
    ]
    off = conveyor("check-config", "--repo", str(repo), cwd=tmp_path,
                   env={"CONVEYOR_KUSTOMIZE": "off"})
    assert off.returncode == 0, off.stdout + off.stderr
    assert "rendering is off (no kustomize)" in off.stderr
    missing = conveyor("check-config", "--repo", str(repo), cwd=tmp_path,
                       env={"CONVEYOR_KUSTOMIZE": "no-such-kustomize build"})
    assert (missing.returncode, missing.stderr) == (
        2, "CONVEYOR_KUSTOMIZE: no-such-kustomize is not an executable on the PATH\n")


def test_a_build_that_prints_what_is_not_yaml_is_one_finding_line(tmp_path: Path) -> None:
    """The parser's words span two lines and more; the finding is one line."""
    repo = copy_layout("boutique-kustomize", tmp_path)
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path,
                    env={"CONVEYOR_KUSTOMIZE": "sh -c 'printf \"kind: Pod\\nError: a: b\\n\"'"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{repo}/kustomize/overlays/{env}/kustomization.yaml:1: the {env} build of "
        f"kustomize/overlays/{env} fails: the render's output is not YAML: line 2, column 9: "
        "mapping values are not allowed in this context"
        for env in ("dev", "production")]


def test_every_chart_environment_is_rendered(tmp_path: Path) -> None:
    """A template that does not render, as the gate sees it; without Helm, the file checks
    alone."""
    repo = copy_layout("podinfo-helm", tmp_path)
    template = repo / "charts/podinfo/templates/deployment.yaml"
    template.write_text(template.read_text() + "{{ .Values.missing.key }}\n")
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" fails: ")[0] for line in lines] == [
        f"{repo}/charts/podinfo/values-{env}.yaml:1: the {env} render of charts/podinfo"
        for env in ("production", "staging")], lines
    assert all("nil pointer evaluating interface {}.key" in line for line in lines)
    off = conveyor("check-config", "--repo", str(repo), cwd=tmp_path,
                   env={"CONVEYOR_HELM": "off"})
    assert off.returncode == 0, off.stdout + off.stderr
    assert "chart rendering is off (no helm)" in off.stderr
    missing = conveyor("check-config", "--repo", str(repo), cwd=tmp_path,
                       env={"CONVEYOR_HELM": "no-such-helm"})
    assert (missing.returncode, missing.stderr) == (
        2, "CONVEYOR_HELM: no-such-helm is not an executable on the PATH\n")


def test_a_render_reading_a_link_or_a_submodule_is_refused_as_the_gate_refuses_it(
        tmp_path: Path) -> None:
    """The checkout follows the link and holds the submodule's files; GitHub holds neither."""
    repo = copy_layout("podinfo-helm", tmp_path)
    (repo / "misc").mkdir()
    (repo / "misc" / "a: b").write_text("kind: Deployment\n")
    (repo / "charts/podinfo/templates/miner.yaml").symlink_to("../../../misc/a: b")
    link = ("`charts/podinfo/templates/miner.yaml` is a symbolic link: Conveyor renders files "
            "as GitHub stores them and cannot judge a link; replace it with the file")
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{repo}/charts/podinfo/values-{env}.yaml:1: the {env} render of charts/podinfo: {link}"
        for env in ("production", "staging")]
    (repo / "charts/podinfo/templates/miner.yaml").unlink()
    (repo / "charts/podinfo/charts/cache").mkdir(parents=True)
    (repo / "charts/podinfo/charts/cache/.git").write_text("gitdir: ../../../.git/modules/c\n")
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert all(line.endswith("`charts/podinfo/charts/cache` is a submodule: Conveyor renders "
                             "files as GitHub stores them and cannot judge another "
                             "repository's files; replace it with the files")
               for line in done.stdout.splitlines()), done.stdout


def test_a_file_another_environments_render_reads_is_said(tmp_path: Path) -> None:
    """argocd-example-apps' helm-guestbook: the image is in the chart's default values,
    which staging promotes into and production's render reads too."""
    repo = copy_layout("guestbook-helm", tmp_path)
    said = [
        f"{repo}/helm-guestbook/values.yaml:1: notice: staging's file, read by the production "
        "render of helm-guestbook too: a change here changes what production runs, and a "
        "promotion into it names production",
        f"{repo}/helm-guestbook/values-production.yaml:1: does not name ghcr.io/acme/guestbook, "
        "the image of service guestbook: Conveyor cannot promote it in production",
    ]
    # a folder that does not say which repository it is: its Applications are not read
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"{repo}/.github/conveyor.yml:1: notice: the Argo CD and Flux objects of the checkout, "
        "which may say how a chart environment renders, are not read: it has no `origin` "
        "remote naming its repository", *said]
    # a clone of acme/deploy, which its Applications follow: each renders as its Application
    # says (the same here: they name no other values)
    subprocess.run(["git", "-C", str(repo), "init", "--quiet"], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin",
                    "https://github.com/acme/deploy.git"], check=True)
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == said


def test_a_policy_outside_a_repository_is_checked_alone(tmp_path: Path) -> None:
    shutil.copy(LAYOUTS / "podinfo-helm/.github/conveyor.yml", tmp_path / "policy.yml")
    done = conveyor("check-config", "policy.yml", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout == "policy.yml: ok (pass --repo DIR to check the files it names too)\n"
    done = conveyor("check-config", "policy.yml", "--repo", str(LAYOUTS / "podinfo-helm"),
                    cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("policy.yml: ok; ")


def test_a_repository_folder_that_does_not_exist(tmp_path: Path) -> None:
    shutil.copy(LAYOUTS / "podinfo-helm/.github/conveyor.yml", tmp_path / "policy.yml")
    done = conveyor("check-config", "policy.yml", "--repo", "nowhere", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "--repo nowhere: no such folder\n"


def test_a_chart_service_is_checked_where_its_version_is_written(tmp_path: Path) -> None:
    repo = tmp_path / "charts"
    for relative, text in {".github/conveyor.yml": POLICY,
                           "deploy/staging/web-chart.yaml": STAGING,
                           "deploy/production/helmfile.yaml": PRODUCTION}.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (repo / "deploy/production/helmfile.yaml").write_text(
        PRODUCTION.replace("charts/web", "charts/webb"))
    done = conveyor("check-config", "--repo", str(repo), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == (f"{repo}/deploy/production/helmfile.yaml:1: does not name "
                           "ghcr.io/acme/charts/web, the chart of service web-chart: Conveyor "
                           "cannot promote it in production\n")
