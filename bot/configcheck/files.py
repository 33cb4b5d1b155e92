"""The checks of one changed file that need nothing but its text (and the policy).

The checks that need other files (a kustomization's references, a values file's chart schema)
take the documents parsed here; reading those files is the caller's part.
"""

from __future__ import annotations

from bot.configcheck import argocd, helm, kustomize
from bot.configcheck.documents import Document, parse_documents
from bot.configcheck.kubernetes import check_resource, is_kustomize, is_resource
from bot.configcheck.report import Finding, Report
from bot.domain.images import image_allowed, same_image
from bot.domain.policy import Policy, PolicyError, load_policy
from bot.manifests import ManifestError, find_all_images
from bot.manifests.charts import VERSION_ONLY_SHAPES
from bot.names import POLICY_PATH


def image_findings(policy: Policy, path: str, text: str) -> list[Finding]:
    owners = policy.environment_for_path(path)
    if not owners:
        return []
    tag_keys = {s.image: s.tag_key for s, _ in owners if s.tag_key}
    try:
        occurrences = find_all_images(text, path=path, tag_keys=tag_keys)
    except ManifestError as exc:
        return [Finding(path, exc.line, exc.message)]
    findings = []
    for occurrence in occurrences:
        if not image_allowed(occurrence.name, policy.allowed_images):
            findings.append(Finding(path, occurrence.line,
                                    f"{occurrence.name} is not under allowed_images "
                                    f"({', '.join(policy.allowed_images)})"))
            continue
        services = {s.name for s, _ in owners if same_image(occurrence.name, s.image)}
        if occurrence.refusal is not None and services:
            findings.append(Finding(path, occurrence.line, f"a promotion of "
                                    f"{', '.join(sorted(services))} would be refused: "
                                    f"{occurrence.refusal}"))
        for service, env in owners:
            # a chart place that holds only a version is judged by the digest it resolves to
            if env.gated and same_image(occurrence.name, service.image) and \
                    occurrence.digest is None and occurrence.shape not in VERSION_ONLY_SHAPES:
                how = ("add `digest: sha256:…` under spec.ref"
                       if occurrence.shape == "flux-ocirepository" else "use TAG@sha256:…")
                findings.append(Finding(
                    path, occurrence.line,
                    f"{service.name} must be pinned by digest in {env.name} "
                    f"(gated by {env.upstreams}): {how}",
                ))
    return findings


def policy_findings(text: str) -> tuple[list[Finding], list[Finding]]:
    """The policy's errors, and its notices (advice that does not fail the check)."""
    try:
        policy = load_policy(text, POLICY_PATH)
    except PolicyError as exc:
        return [Finding(POLICY_PATH, issue.line, f"{issue.column}: {issue.message}")
                for issue in exc.issues], []
    return [], [Finding(POLICY_PATH, notice.line, notice.message) for notice in policy.notices]


def is_checked(path: str) -> bool:
    return path.endswith((".yaml", ".yml")) or kustomize.is_kustomization(path)


def may_hold_resources(path: str) -> bool:
    return not (path == POLICY_PATH or helm.is_values_file(path)
                or kustomize.is_kustomization(path))


def is_helm_template(path: str, text: str) -> bool:
    return "/templates/" in f"/{path}" and "{{" in text


def check_text(report: Report, policy: Policy | None, path: str, text: str, *,
               patch: bool = False) -> list[Document]:
    """The checks that need nothing but the file itself; the documents, for the rest. A
    ``patch`` (a file a kustomization names under ``patches``) is partial by design: it is not
    validated as a whole resource; what it patches is judged in the build."""
    report.files += 1
    if path == POLICY_PATH:
        errors, notices = policy_findings(text)
        report.findings += errors
        report.notices += notices
        return []
    if is_helm_template(path, text):
        report.notes.append(Finding(path, 1, "Helm template: checked once rendered, not here"))
        return []
    parsed = parse_documents(text)
    report.add(path, [(p.line, p.message) for p in parsed.problems])
    if not parsed.ok:
        return []
    report.documents += len(parsed.documents)
    if policy is not None:
        report.findings += image_findings(policy, path, text)
    for doc in parsed.documents:
        report.add(path, argocd.source_findings(doc, path))
    if not may_hold_resources(path) or patch:
        return parsed.documents  # not whole Kubernetes resources
    for doc in parsed.documents:
        if not is_resource(doc.data) or is_kustomize(doc.data):
            continue
        outcome = check_resource(doc, report.kubernetes_version)
        report.resources += outcome.validated
        report.add(path, list(outcome.findings))
        if outcome.note is not None:
            report.notes.append(Finding(path, doc.line, outcome.note))
    return parsed.documents


def check_file(kubernetes_version: str, policy: Policy | None, path: str, text: str,
               patch: bool = False) -> tuple[Report, list[Document]]:
    """`check_text` on a report of its own, for a worker process (both results pickle)."""
    report = Report(kubernetes_version=kubernetes_version)
    return report, check_text(report, policy, path, text, patch=patch)
