"""Offline commands: `check-config FILE` and `bump` on a local copy of a deployment repo."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from bot.cli.localrepo import not_utf8, repository_root
from bot.domain.images import parse_image_ref, same_image
from bot.domain.policy import check_config_file
from bot.github.repos import MAX_FILE_BYTES
from bot.manifests import ManifestError, promote_image
from bot.names import POLICY_PATH
from bot.render.build import Builder
from bot.render.tool import HELM_SETTING, KUSTOMIZE_SETTING, find_helm, find_kustomize


def check_config(file_path: str | None, repo_dir: str | None = None) -> int:
    """The policy; then, inside a repository (or with `--repo`), the files it names."""
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
    if not root.is_dir():
        print(f"--repo {root}: no such folder", file=sys.stderr)
        return 2
    from bot.cli.repocheck import check_repository

    try:
        tool = find_kustomize(os.environ.get(KUSTOMIZE_SETTING))
    except ValueError as exc:
        print(f"{KUSTOMIZE_SETTING}: {exc}", file=sys.stderr)
        return 2
    try:
        helm = find_helm(os.environ.get(HELM_SETTING))
    except ValueError as exc:
        print(f"{HELM_SETTING}: {exc}", file=sys.stderr)
        return 2
    if tool is None:
        print("rendering is off (no kustomize): Kustomize environments are not built",
              file=sys.stderr)
    if helm is None:
        print("chart rendering is off (no helm): chart environments are not rendered",
              file=sys.stderr)
    findings, notices = check_repository(root, policy, Builder(tool, helm)
                                         if tool is not None or helm is not None else None)
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


def _enclosing_repository(policy_file: Path) -> Path | None:
    """The repository root when the policy sits in a `.github/` folder, else None."""
    root = repository_root(policy_file)
    return root if root != policy_file.resolve().parent else None


def _inside(root: Path, relative: str) -> Path | None:
    target = (root / relative).resolve()
    return target if target.is_relative_to(root.resolve()) else None


def bump(repo_dir: str, service: str, env: str, image: str, *, write: bool,
         chart: bool = False) -> int:
    root = Path(repo_dir)
    policy_file = root / POLICY_PATH
    policy, issues = check_config_file(str(policy_file))
    if policy is None:
        for issue in issues:
            print(issue, file=sys.stderr)
        return 1
    if service not in policy.services:
        print(f"unknown service {service!r}; services are: {', '.join(policy.services)}",
              file=sys.stderr)
        return 1
    if env not in policy.environments:
        print(f"unknown environment {env!r}; environments are: "
              f"{', '.join(policy.environments)}", file=sys.stderr)
        return 1
    option = "--chart" if chart else "--image"
    if policy.services[service].is_chart != chart:
        shipped = "a Helm chart: use --chart" if not chart else "an image: use --image"
        print(f"service {service} is {shipped}", file=sys.stderr)
        return 1
    try:
        ref = parse_image_ref(image)
    except ValueError as exc:
        print(f"{option}: {exc}", file=sys.stderr)
        return 1
    # A loaded policy has every service's image under allowed_images: naming it is enough.
    wanted = policy.services[service].image
    if not same_image(ref.name, wanted):
        print(f"{option} names {ref.name}, but service {service} is {wanted}", file=sys.stderr)
        return 1
    if ref.digest is None or ref.tag is None:
        # Offline there is no registry to read the tag of a bare digest from, and without the
        # tag the tag policy cannot be checked and the file would keep its old tag.
        missing = "a digest" if ref.digest is None else "a tag"
        print(f"{option} must carry {missing} (NAME:TAG@sha256:...): a promotion pins the "
              "digest and writes the tag it was released as", file=sys.stderr)
        return 1
    for tag_policy in policy.tag_policy_for(service, env):
        if not tag_policy.admits(ref.tag):
            print(f"{ref.tag} is not admitted in {env} (tag policy `{tag_policy}`)",
                  file=sys.stderr)
            return 1
    relative = policy.path_for(service, env)
    target = _inside(root, relative)
    if target is None:
        print(f"{relative}: outside the repository", file=sys.stderr)
        return 1
    try:
        with open(target, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        print(f"{relative}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if len(data) > MAX_FILE_BYTES:
        print(f"{relative}: larger than {MAX_FILE_BYTES} bytes, the most Conveyor reads of one "
              "file", file=sys.stderr)
        return 1
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        print(f"{relative}: {not_utf8(data, exc)}", file=sys.stderr)
        return 1
    try:
        edit = promote_image(text, image=wanted, tag=ref.tag, digest=ref.digest, path=relative,
                             tag_key=policy.services[service].tag_key)
    except ManifestError as exc:
        print(exc, file=sys.stderr)
        return 1
    for note in edit.notes:
        print(f"note: {note}", file=sys.stderr)
    if not edit.changed:
        print(f"{relative}: already pins {ref.digest}", file=sys.stderr)
        return 0
    sys.stdout.write(edit.unified_diff())
    if write:
        _write_atomically(target, edit.new_text)
    return 0


def _write_atomically(target: Path, text: str) -> None:
    mode = target.stat().st_mode
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, mode & 0o777)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
