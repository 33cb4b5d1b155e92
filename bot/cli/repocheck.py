"""`check-config --repo DIR`: the policy against the deployment repository's own files.

Every service × environment file must exist and name the service's image (a Kustomize overlay
without an `images:` entry gets the entry to add); then the files get the same checks as the
`conveyor/config-check` run (YAML, Kubernetes schemas, kustomization references and `images`,
Helm values schemas, `allowed_images` and digest pins in gated environments); then every
Kustomize and chart environment is rendered as the gate renders it (`CONVEYOR_KUSTOMIZE`,
`CONVEYOR_HELM`), and each environment's file that a gated environment's render reads too
is said.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from bot.cli.localrepo import LocalFolder, PolicyFiles, is_file, read_policy_files
from bot.cli.localsyncs import local_renders
from bot.configcheck import helm, kustomize
from bot.configcheck.files import check_text, may_hold_resources
from bot.configcheck.kubernetes import prepare
from bot.configcheck.report import Report
from bot.domain.images import parse_image_ref, same_image
from bot.domain.policy import Policy
from bot.github.repos import FileTooLarge, RepoFile
from bot.github.snapshot import git_blob_sha
from bot.manifests import ManifestError, find_images
from bot.names import POLICY_PATH
from bot.promotion.builds import (
    MAX_BINARY_BYTES,
    EnvironmentRender,
    builder_renders,
    render_anchor,
    run_render,
    walk_inputs,
)
from bot.promotion.configcheck.builds import overlap_notices
from bot.promotion.configcheck.run import check_kustomization, check_values
from bot.render.build import Builder
from bot.render.inputs import SUBMODULE_MODE, SYMLINK_MODE, TreeIndex
from bot.render.reads import RenderInputs

MAX_LOCAL_FILES = 50_000


@dataclass(frozen=True)
class RepoFinding:
    path: str
    line: int
    message: str
    hint: tuple[str, ...] = ()  # lines to show under the message

    def lines(self, root: Path) -> list[str]:
        return [f"{root / self.path}:{self.line}: {self.message}",
                *(f"    {line}" for line in self.hint)]


def kustomize_entry_hint(image: str) -> tuple[str, ...]:
    return ("add this entry under `images:` (Conveyor writes the tag and digest there):",
            "images:", f"  - name: {image}", '    newTag: "0.0.0"  # the version running today')


def placement_findings(policy: Policy, files: PolicyFiles) -> list[RepoFinding]:
    """Each service's file in each environment exists and names the service's image."""
    findings = [RepoFinding(u.path, u.line, u.message) for u in files.unreadable]
    for path in files.missing:
        owners = ", ".join(f"{service.name} in {env.name}"
                           for service, env in policy.environment_for_path(path))
        findings.append(RepoFinding(path, 1, f"does not exist (the file of {owners})"))
    for name, service in policy.services.items():
        for env in policy.environments:
            path = policy.path_for(name, env)
            text = files.texts.get(path)
            if text is None:
                continue
            try:
                found = find_images(text, service.image, path=path, tag_key=service.tag_key)
            except ManifestError as exc:
                findings.append(RepoFinding(path, max(exc.line, 1), exc.message))
                continue
            if found:
                continue
            message = (f"does not name {service.image}, the {service.kind} of service {name}: "
                       f"Conveyor cannot promote it in {env}")
            hint = kustomize_entry_hint(service.image) if kustomize.is_kustomization(path) \
                else ()
            findings.append(RepoFinding(path, 1, message, hint))
    return findings


async def manifest_findings(root: Path, policy: Policy, files: PolicyFiles) -> list[RepoFinding]:
    """The config check's own validators over the files the policy names."""
    report = Report(kubernetes_version=policy.kubernetes_version)
    view = LocalFolder(root)
    if any(may_hold_resources(path) for path in files.texts):
        prepare(policy.kubernetes_version)
    kustomizations, values = {}, {}
    for path, text in files.texts.items():
        documents = check_text(report, policy, path, text)
        if kustomize.is_kustomization(path) and documents:
            kustomizations[path] = documents[0]
        elif helm.is_values_file(path) and len(documents) == 1:
            values[path] = documents[0]
    for path, doc in kustomizations.items():
        await check_kustomization(report, view, path, doc)
    for path, doc in values.items():
        await check_values(report, view, path, doc)
    return [RepoFinding(f.path, f.line, f.message) for f in report.findings]


def local_index(root: Path) -> TreeIndex | None:
    """The files of a checkout (without `.git`), as a tree; None when there are too many to
    build from. A symbolic link (to a file or a folder) is listed as git lists it, a blob of
    mode 120000, and a submodule's checkout (a folder holding `.git`) as an entry of mode
    160000 whose files are not listed: a render reading either is not run, as on GitHub."""
    sizes: dict[str, int] = {}
    modes: dict[str, str] = {}
    for folder, subfolders, names in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        entered = []
        for name in sorted(subfolders):
            path = name if relative == "." else f"{relative}/{name}"
            full = Path(folder) / name
            if full.is_symlink():  # os.walk lists a link to a folder without entering it
                names.append(name)
            elif (full / ".git").exists():
                modes[path] = SUBMODULE_MODE
            elif name != ".git":
                entered.append(name)
        subfolders[:] = entered
        for name in names:
            path = name if relative == "." else f"{relative}/{name}"
            full = Path(folder) / name
            if full.is_symlink():
                modes[path] = SYMLINK_MODE
            elif name == ".git" or not full.is_file():
                continue
            sizes[path] = full.lstat().st_size
            if len(sizes) > MAX_LOCAL_FILES:
                return None
    return TreeIndex(sizes, modes)


class LocalFiles:
    """The checkout's files, read for renders (`bot.promotion.builds.Files`)."""

    def __init__(self, root: Path) -> None:
        self.folder = LocalFolder(root)

    async def texts(self, paths: list[str]) -> dict[str, str | None]:
        return {path: _local_text(self.folder, path) for path in paths}

    async def binary(self, path: str) -> bytes | None:
        target = self.folder.resolve(path)
        if target is None or not is_file(target) or target.stat().st_size > MAX_BINARY_BYTES:
            return None
        return target.read_bytes()

    def blob(self, path: str) -> str:
        target = self.folder.resolve(path)
        return git_blob_sha(target.read_bytes()) if target is not None and is_file(target) \
            else ""


async def build_findings(root: Path, policy: Policy, builder: Builder | None,
                         reported: frozenset[str] = frozenset()
                         ) -> tuple[list[RepoFinding], list[RepoFinding]]:
    """Every rendered environment (Kustomize overlays; charts where a Helm is configured)
    rendered as the gate renders it: a render that fails, and a service whose image no
    workload of its environment's render runs (an `images:` entry that matches no container,
    values the templates do not read), are findings. A render that reads a file of
    ``reported`` (found unreadable already) is not run. Besides, each environment's file
    that a gated environment's render reads too is said (a notice)."""
    if builder is None:
        return [], []
    index = local_index(root)
    if index is None:
        return [RepoFinding(POLICY_PATH, 1, f"more than {MAX_LOCAL_FILES} files: the "
                                            "environments are not rendered")], []
    files = LocalFiles(root)
    findings: list[RepoFinding] = []
    read: dict[EnvironmentRender, RenderInputs] = {}
    renders, unread = await local_renders(root, files, policy, index)
    for render in renders:
        if not builder_renders(builder, render.target):
            continue
        anchor = render_anchor(policy, index, render)
        inputs = read[render] = await walk_inputs(index, render.target, files)
        what = f"the {render.environment} {render.kind} of {render.where}"
        if reported.intersection(inputs.files):
            continue
        if inputs.problems:
            findings += [RepoFinding(anchor, 1, f"{what}: {problem}")
                         for problem in inputs.problems]
            continue
        texts = await files.texts(list(inputs.files))
        unreadable = sorted(path for path, text in texts.items() if text is None
                            and not path.endswith(".tgz"))
        if unreadable:
            findings.append(RepoFinding(anchor, 1, f"{what} reads {unreadable[0]}, "
                                                   "which is not UTF-8 text"))
            continue
        result = await run_render(builder, inputs, files)
        if result.images is None:
            findings.append(RepoFinding(anchor, 1, f"{what} fails: {result.error}"))
            continue
        names = {_name(image) for image in result.images.values()}
        for service in render.services:
            image = policy.services[service].image
            if policy.services[service].is_chart or any(
                    name is not None and same_image(name, image) for name in names):
                continue
            findings.append(RepoFinding(anchor, 1, (
                f"{what} runs no {image} (service {service}): a promotion there would "
                "change no workload; " + ("do the chart's templates read the values that "
                                          "name it?" if render.kind == "render" else
                                          "does its `images:` entry name what the workloads "
                                          "run?"))))
    notices = overlap_notices(policy, sorted({policy.path_for(service, env) for service in
                                              policy.services for env in policy.environments}),
                              read)
    said = [RepoFinding(n.path, n.line, f"notice: {n.message}") for n in notices]
    if unread is not None:
        said.append(RepoFinding(POLICY_PATH, 1, f"notice: {unread}"))
    return findings, said


def _local_text(folder: LocalFolder, path: str) -> str | None:
    try:
        read = folder.read(path)
    except FileTooLarge:
        return None
    return read.text if isinstance(read, RepoFile) else None


def _name(image: str) -> str | None:
    try:
        return parse_image_ref(image).name
    except ValueError:
        return None


def check_repository(root: Path, policy: Policy, builder: Builder | None = None
                     ) -> tuple[list[RepoFinding], list[RepoFinding]]:
    """The problems of the repository's files, and its notices (files that several
    environments' renders read)."""
    files = read_policy_files(root, policy)
    rendered, notices = asyncio.run(
        build_findings(root, policy, builder, frozenset(u.path for u in files.unreadable)))
    findings = placement_findings(policy, files) + asyncio.run(
        manifest_findings(root, policy, files)) + rendered
    unique = {(f.path, f.line, f.message): f for f in findings}
    return (sorted(unique.values(), key=lambda f: (f.path, f.line, f.message)),
            sorted(notices, key=lambda f: (f.path, f.line, f.message)))
