"""`check-config` and `bump` on a local copy of a deployment repository, called in process:
what each refusal says (one line on stderr), what a bump writes, and that a refusal writes
nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bot.cli.bump import bump
from bot.cli.offline import check_config
from bot.names import POLICY_PATH
from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY

DIGEST = "sha256:" + "b" * 64
STAGING = "apps/web/overlays/staging/kustomization.yaml"


def demo_repo(root: Path, policy: str = DEMO_POLICY) -> Path:
    for relative, text in {**DEMO_FILES, POLICY_PATH: policy}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def refusal(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


# -- check-config ----------------------------------------------------------------------------------
def test_check_config_needs_a_file_or_a_repo(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_config(None) == 2
    assert refusal(capsys) == "check-config needs a policy FILE or --repo DIR"


def test_check_config_of_a_repository_checks_the_files_it_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    assert check_config(None, str(repo)) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{repo}/apps/web/overlays/prod/kustomization.yaml:6: web must be pinned by digest in "
        "production (gated by staging): use TAG@sha256:…",
        f"{repo}/charts/api/values-production.yaml:4: api must be pinned by digest in "
        "production (gated by staging): use TAG@sha256:…"]
    assert captured.err == f"2 problem(s) in the files of {repo}\n"
    # pinning both production files by digest is what the check asks for
    for service in ("web", "api"):
        assert bump(str(repo), service, "production", f"ghcr.io/acme/{service}:1.0.0@{DIGEST}",
                    write=True) == 0
    capsys.readouterr()
    assert check_config(None, str(repo)) == 0
    assert capsys.readouterr().out == (f"{repo / POLICY_PATH}: ok; {repo}: 4 file(s) for 2 "
                                       "service(s) × 2 environment(s) ok\n")


def test_check_config_finds_the_enclosing_repository(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).unlink()
    assert check_config(str(repo / POLICY_PATH)) == 1
    captured = capsys.readouterr()
    assert STAGING in captured.out
    assert captured.err == f"3 problem(s) in the files of {repo.resolve()}\n"


def test_a_policy_outside_a_repository_is_checked_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "conveyor.yml"
    policy.write_text(DEMO_POLICY)
    assert check_config(str(policy)) == 0
    assert capsys.readouterr().out == (
        f"{policy}: ok (pass --repo DIR to check the files it names too)\n")


def test_check_config_with_a_missing_repo_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "conveyor.yml"
    policy.write_text(DEMO_POLICY)
    assert check_config(str(policy), str(tmp_path / "nowhere")) == 2
    assert refusal(capsys) == f"--repo {tmp_path / 'nowhere'}: no such folder"


def test_check_config_of_a_repo_folder_that_is_missing_or_a_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Said of --repo itself, not of the policy file that would be in it."""
    assert check_config(None, str(tmp_path / "nowhere")) == 2
    assert refusal(capsys) == f"--repo {tmp_path / 'nowhere'}: no such folder"
    (tmp_path / "file").write_text("")
    assert check_config(None, str(tmp_path / "file")) == 2
    assert refusal(capsys) == f"--repo {tmp_path / 'file'}: not a folder"
    policy = tmp_path / "conveyor.yml"
    policy.write_text(DEMO_POLICY)
    assert check_config(str(policy), str(tmp_path / "file")) == 2
    assert refusal(capsys) == f"--repo {tmp_path / 'file'}: not a folder"
    assert check_config(None, str(tmp_path / ("y" * 300))) == 2
    assert refusal(capsys) == f"--repo {tmp_path / ('y' * 300)}: File name too long"


def test_a_broken_policy_lists_its_errors_and_counts_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "conveyor.yml"
    policy.write_text(DEMO_POLICY.replace("version: 1", "version: 7"))
    assert check_config(str(policy)) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{policy}:") and "version" in captured.out
    errors = len(captured.out.splitlines())
    assert errors >= 1 and captured.err == f"{errors} error(s)\n"


# -- bump ------------------------------------------------------------------------------------------
def run_bump(repo: Path, image: str, *, service: str = "web", env: str = "staging",
             write: bool = True) -> int:
    return bump(str(repo), service, env, image, write=write)


@pytest.mark.parametrize(("service", "env", "image", "message"), [
    ("cart", "staging", f"ghcr.io/acme/web:1.2.0@{DIGEST}",
     "unknown service 'cart'; services are: web, api"),
    ("web", "qa", f"ghcr.io/acme/web:1.2.0@{DIGEST}",
     "unknown environment 'qa'; environments are: staging, production"),
    ("web", "staging", "ghcr.io/acme/web:1.2.0@sha256:short",
     "--image: "),
    ("web", "staging", f"ghcr.io/acme/api:1.2.0@{DIGEST}",
     "--image names ghcr.io/acme/api, but service web is ghcr.io/acme/web"),
    ("web", "staging", f"ghcr.io/acme/web@{DIGEST}",
     "--image must carry a tag (NAME:TAG@sha256:...)"),
    ("web", "staging", "ghcr.io/acme/web:1.2.0",
     "--image must carry a digest (NAME:TAG@sha256:...)"),
    ("web", "staging", f"ghcr.io/acme/web:0.5.0@{DIGEST}",
     "web 0.5.0 is not admitted in staging (tag policy `semver:>=1.0.0`)"),
])
def test_refused_bumps_say_why_and_write_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        service: str, env: str, image: str, message: str) -> None:
    repo = demo_repo(tmp_path / "deploy")
    before = (repo / STAGING).read_text()
    assert run_bump(repo, image, service=service, env=env) == 1
    assert refusal(capsys).startswith(message)
    assert (repo / STAGING).read_text() == before


def test_a_manifest_over_the_size_limit_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    oversized = (repo / STAGING).read_text() + "#" * (1024 * 1024) + "\n"
    (repo / STAGING).write_text(oversized)
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert refusal(capsys) == (f"{STAGING}: larger than 1048576 bytes, the most Conveyor "
                               "reads of one file")
    assert (repo / STAGING).read_text() == oversized


def test_a_missing_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).unlink()
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert refusal(capsys) == f"{STAGING}: cannot read: No such file or directory"


def test_a_manifest_without_the_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).write_text("resources:\n  - ../../base\n")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert STAGING in refusal(capsys)
    assert (repo / STAGING).read_text() == "resources:\n  - ../../base\n"


def test_a_bump_prints_the_diff_writes_the_file_and_keeps_its_mode(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).chmod(0o640)
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 0
    diff = capsys.readouterr().out
    assert diff.splitlines()[-3:] == ['-    newTag: "0.9.0"  # promoted by Conveyor',
                                      '+    newTag: "1.2.0"  # promoted by Conveyor',
                                      f"+    digest: {DIGEST}"]
    written = (repo / STAGING).read_text()
    assert written == DEMO_FILES[STAGING].replace(
        '"0.9.0"  # promoted by Conveyor\n',
        f'"1.2.0"  # promoted by Conveyor\n    digest: {DIGEST}\n')
    assert stat.S_IMODE((repo / STAGING).stat().st_mode) == 0o640
    assert sorted(p.name for p in (repo / STAGING).parent.iterdir()) == ["kustomization.yaml"]


def test_without_write_the_diff_is_printed_and_the_file_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}", write=False) == 0
    assert capsys.readouterr().out.endswith(f"+    digest: {DIGEST}\n")
    assert (repo / STAGING).read_text() == DEMO_FILES[STAGING]


def test_bumping_to_the_pinned_digest_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 0
    capsys.readouterr()
    written = (repo / STAGING).read_text()
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 0
    assert refusal(capsys) == f"web 1.2.0 is already live in staging (`{STAGING}`)"
    assert (repo / STAGING).read_text() == written


@pytest.mark.parametrize("setting", ["CONVEYOR_KUSTOMIZE", "CONVEYOR_HELM"])
def test_a_bump_with_a_missing_render_tool_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        setting: str) -> None:
    repo = demo_repo(tmp_path / "deploy")
    monkeypatch.setenv(setting, str(tmp_path / "no-such-tool"))
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 2
    assert refusal(capsys).startswith(f"{setting}: ")
    assert (repo / STAGING).read_text() == DEMO_FILES[STAGING]


def test_a_bump_whose_render_fails_is_left_to_the_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As the opener does: a render that cannot be compared refuses nothing (the gate judges
    the pull request's render)."""
    repo = demo_repo(tmp_path / "deploy")
    (repo / "apps/web/base/kustomization.yaml").write_text("resources:\n  - missing.yaml\n")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 0
    assert capsys.readouterr().out.endswith(f"+    digest: {DIGEST}\n")


def test_a_bump_with_rendering_off_edits_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = demo_repo(tmp_path / "deploy")
    monkeypatch.setenv("CONVEYOR_KUSTOMIZE", "off")
    monkeypatch.setenv("CONVEYOR_HELM", "off")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 0
    assert capsys.readouterr().out.endswith(f"+    digest: {DIGEST}\n")


def test_a_bump_in_a_repository_with_a_broken_policy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy", policy="version: 1\nservices: [\n")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"{repo / POLICY_PATH}:")


def test_a_bump_names_how_the_service_ships(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    assert bump(str(repo), "web", "staging", f"ghcr.io/acme/web:1.2.0@{DIGEST}", write=True,
                chart=True) == 1
    assert refusal(capsys) == "service web is an image: use --image"


def test_a_manifest_that_is_not_utf8_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).write_bytes(b"images:\n  - name: \xff\n")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert refusal(capsys).startswith(f"{STAGING}: ")


def test_a_failed_write_leaves_the_file_and_no_temporary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = demo_repo(tmp_path / "deploy")

    def disk_full(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("bot.cli.bump.os.replace", disk_full)
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{STAGING}: cannot write: No space left on device")
    assert (repo / STAGING).read_text() == DEMO_FILES[STAGING]
    assert sorted(p.name for p in (repo / STAGING).parent.iterdir()) == ["kustomization.yaml"]


def test_check_config_names_files_it_cannot_use(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    for service in ("web", "api"):
        assert bump(str(repo), service, "production", f"ghcr.io/acme/{service}:1.0.0@{DIGEST}",
                    write=True) == 0
    (repo / "charts/api/values-staging.yaml").write_text("x: 1\n" + "#" * 1024 * 1024 + "\n")
    base = repo / "apps/web/base/deployment.yaml"
    base.unlink()
    base.symlink_to("/etc/passwd")  # named by the kustomization, outside the repository
    capsys.readouterr()
    assert check_config(None, str(repo)) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"{repo}/apps/web/base/deployment.yaml:1: the path leaves the repository",
        f"{repo}/charts/api/values-staging.yaml:1: charts/api/values-staging.yaml is larger "
        "than 1048576 bytes"]
    assert captured.err == f"2 problem(s) in the files of {repo}\n"


def test_a_write_into_a_read_only_folder_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = demo_repo(tmp_path / "deploy")

    def read_only(**_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("bot.cli.bump.tempfile.mkstemp", read_only)
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{STAGING}: cannot write: Permission denied")
    assert (repo / STAGING).read_text() == DEMO_FILES[STAGING]


def test_a_symbolic_link_loop_is_a_file_that_cannot_be_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).unlink()
    (repo / STAGING).symlink_to("kustomization.yaml")
    (repo / "misc").mkdir()
    (repo / "misc/loop.yaml").symlink_to("loop.yaml")
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert refusal(capsys) == f"{STAGING}: cannot read: symbolic link loop"
    assert run_bump(repo, f"ghcr.io/acme/api:1.2.0@{DIGEST}", service="api") == 0
    capsys.readouterr()
    assert check_config(None, str(repo)) == 1
    assert f"{repo}/{STAGING}:1: cannot read: symbolic link loop" in (
        capsys.readouterr().out.splitlines())


def test_a_path_with_a_name_too_long_is_a_file_that_cannot_be_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long = "y" * 300
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).write_text(DEMO_FILES[STAGING].replace("  - ../../base\n",
                                                            f"  - ../../base\n  - {long}\n"))
    assert check_config(None, str(repo)) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"{repo}/apps/web/overlays/staging/{long}:1: cannot read: File name too long" in out


def test_a_fifo_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = demo_repo(tmp_path / "deploy")
    (repo / STAGING).unlink()
    os.mkfifo(repo / STAGING)
    assert run_bump(repo, f"ghcr.io/acme/web:1.2.0@{DIGEST}") == 1
    assert refusal(capsys) == f"{STAGING}: cannot read: not a regular file"
