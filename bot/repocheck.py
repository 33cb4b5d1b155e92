"""`check-config --repo DIR`: the policy against the deployment repository's own files.

Every service × environment file must exist and name the service's image (a Kustomize overlay
without an `images:` entry gets the entry to add); then the files get the same checks as the
`conveyor/config-check` run (YAML, Kubernetes schemas, kustomization references and `images`,
Helm values schemas, `allowed_images` and digest pins in gated environments).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from .configcheck import helm, kustomize
from .configcheck.files import check_text, may_hold_resources
from .configcheck.kubernetes import prepare
from .configcheck.report import Report
from .domain.policy import Policy
from .localrepo import LocalFolder, PolicyFiles, read_policy_files
from .manifests import ManifestError, find_images
from .promotion.configcheck.run import check_kustomization, check_values


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
            message = (f"does not name {service.image}, the image of service {name}: "
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


def check_repository(root: Path, policy: Policy) -> list[RepoFinding]:
    files = read_policy_files(root, policy)
    findings = placement_findings(policy, files) + asyncio.run(
        manifest_findings(root, policy, files))
    unique = {(f.path, f.line, f.message): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.path, f.line, f.message))
