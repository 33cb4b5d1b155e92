"""Offline commands: `check-config FILE` on a local copy of a deployment repo, and the
renderer the offline commands share."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from bot.cli.localrepo import repository_root
from bot.domain.policy import check_config_file
from bot.names import POLICY_PATH
from bot.render.build import Builder
from bot.render.tool import HELM_SETTING, KUSTOMIZE_SETTING, find_helm, find_kustomize


def check_config(file_path: str | None, repo_dir: str | None = None) -> int:
    """The policy; then, inside a repository (or with `--repo`), the files it names."""
    repo_problem = _folder_problem(repo_dir) if repo_dir is not None else None
    if repo_problem is not None:
        print(f"--repo {repo_dir}: {repo_problem}", file=sys.stderr)
        return 2
    if file_path is None:
        if repo_dir is None:
            print("check-config needs a policy FILE or --repo DIR", file=sys.stderr)
            return 2
        file_path = str(Path(repo_dir) / POLICY_PATH)
    policy, issues = check_config_file(file_path)
    for issue in issues:
        print(issue)
    if policy is None:
        print(f"{len(issues)} error(s)", file=sys.stderr)
        return 1
    for notice in policy.notices:
        print(f"{notice.path}:{notice.line}:{notice.column}: notice: {notice.message}")
    root = Path(repo_dir) if repo_dir is not None else _enclosing_repository(Path(file_path))
    if root is None:
        print(f"{file_path}: ok (pass --repo DIR to check the files it names too)")
        return 0
    from bot.cli.repocheck import check_repository

    try:
        builder = local_builder()
    except ToolSettingError as exc:
        print(exc, file=sys.stderr)
        return 2
    if builder is None or builder.tool is None:
        print("rendering is off (no kustomize): Kustomize environments are not built",
              file=sys.stderr)
    if builder is None or builder.helm is None:
        print("chart rendering is off (no helm): chart environments are not rendered",
              file=sys.stderr)
    findings, notices = check_repository(root, policy, builder)
    for finding in [*notices, *findings]:
        for line in finding.lines(root):
            print(line)
    if findings:
        print(f"{len(findings)} problem(s) in the files of {root}", file=sys.stderr)
        return 1
    files = len({policy.path_for(s, e) for s in policy.services for e in policy.environments})
    print(f"{file_path}: ok; {root}: {files} file(s) for {len(policy.services)} service(s) × "
          f"{len(policy.environments)} environment(s) ok")
    return 0


def _folder_problem(path: str) -> str | None:
    """Why `path` is not a folder; None when it is one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such folder"
    except OSError as exc:  # a name too long, a folder that cannot be searched
        return exc.strerror or str(exc)
    return None if stat.S_ISDIR(mode) else "not a folder"


def _enclosing_repository(policy_file: Path) -> Path | None:
    """The repository root when the policy sits in a `.github/` folder, else None."""
    root = repository_root(policy_file)
    return root if root != policy_file.resolve().parent else None


class ToolSettingError(ValueError):
    """A kustomize or Helm setting names no usable command (one line: which, and why)."""


def local_builder() -> Builder | None:
    """The renderer of the offline commands, from the settings the server reads; None when
    neither kustomize nor Helm is there (rendering is off)."""
    try:
        tool = find_kustomize(os.environ.get(KUSTOMIZE_SETTING))
    except ValueError as exc:
        raise ToolSettingError(f"{KUSTOMIZE_SETTING}: {exc}") from exc
    try:
        helm = find_helm(os.environ.get(HELM_SETTING))
    except ValueError as exc:
        raise ToolSettingError(f"{HELM_SETTING}: {exc}") from exc
    return Builder(tool, helm) if tool is not None or helm is not None else None
