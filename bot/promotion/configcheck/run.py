"""Check run `conveyor/config-check`: what a change to the deployment repository breaks.

For the changed files at the head commit: every YAML file parses (all documents); every
Kubernetes resource is valid against the OpenAPI schema of the policy's `kubernetes_version`;
every kustomization that is changed, or that includes a changed file from the same or a
parent directory, names files that exist and well-formed `images`; a Helm values file is
valid against its chart's `values.schema.json`; Argo CD sources hold well-formed
`kustomize.images` strings and `helm.parameters`; in files that hold a service's image, image
references are under `allowed_images` and digest-pinned in gated environments; a changed
policy file is valid. Findings are annotations on the offending lines.

The checks themselves are pure (``bot.configcheck``); this module reads the files they need
from GitHub at the commit and posts the check run.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI

from bot.configcheck import helm, kustomize
from bot.configcheck.documents import Document, parse_documents
from bot.configcheck.files import check_file, check_text, is_checked, may_hold_resources
from bot.configcheck.kubernetes import prepare
from bot.configcheck.report import Finding, Report, render
from bot.domain.policy import Policy
from bot.domain.policy.kubernetes import latest_kubernetes_version
from bot.github.checks import (
    check_output,
    check_run,
    create_check_run,
    own_run,
    update_check_run,
)
from bot.github.limits import ANNOTATIONS_PER_REQUEST, OUTPUT_LIMIT, fit
from bot.github.repos import FileTooLarge, RepoFile
from bot.names import CONFIG_CHECK
from bot.promotion.configcheck.builds import build_findings
from bot.promotion.configcheck.repoview import FileSource, RepoView, kind_of
from bot.runtime.offload import INLINE_BELOW, run_cpu

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

MAX_FILES = 300
MAX_DIRECTORIES = 300  # ancestor directories searched for kustomizations


async def _read(view: FileSource, path: str) -> RepoFile | FileTooLarge | None:
    try:
        return await view.file(path)
    except FileTooLarge as exc:
        return exc


async def _find_kustomization(view: RepoView, directory: str) -> str | None:
    entries = await view.listing(directory)
    for name in kustomize.KUSTOMIZATION_NAMES:
        if entries is not None and entries.get(name) == "file":
            return posixpath.join(directory, name)
    return None


def _ancestors(path: str) -> list[str]:
    found: list[str] = []
    directory = posixpath.dirname(path)
    while True:
        found.append(directory)
        if not directory:
            return found
        directory = posixpath.dirname(directory)


async def _including_kustomizations(view: RepoView, changed: list[str],
                                    known: dict[str, list[Document]]) -> dict[str, Document]:
    """Kustomizations in the same or a parent directory of a changed file that include it."""
    directories = sorted({d for path in changed for d in _ancestors(path)})[:MAX_DIRECTORIES]
    candidates = await asyncio.gather(*(_find_kustomization(view, d) for d in directories))
    result: dict[str, Document] = {}
    paths = sorted({c for c in candidates if c is not None and c not in known})
    reads = await asyncio.gather(*(_read(view, path) for path in paths))
    for path, read in zip(paths, reads, strict=True):
        if not isinstance(read, RepoFile):
            continue
        parsed = parse_documents(read.text)
        if not parsed.ok or not parsed.documents or not isinstance(
                parsed.documents[0].data, dict):
            continue
        doc = parsed.documents[0]
        refs, _ = kustomize.references(doc, posixpath.dirname(path))
        if any(kustomize.includes(refs, p) for p in changed if p != path):
            result[path] = doc
    return result


async def check_kustomization(report: Report, view: FileSource, path: str, doc: Document) -> None:
    if not isinstance(doc.data, dict):
        report.add(path, [(doc.line, "a kustomization must be a mapping")])
        return
    report.kustomizations.add(path)
    refs, found = kustomize.references(doc, posixpath.dirname(path))
    found += kustomize.image_findings(doc)
    kinds = await asyncio.gather(*(kind_of(view, ref.target) for ref in refs))
    for ref, kind in zip(refs, kinds, strict=True):
        if kind is None:
            found.append((ref.line, f"{ref.field}: '{ref.entry}' does not exist ({ref.target} "
                                    "is not in the repository at this commit)"))
        elif kind == "dir" and not ref.may_be_directory:
            found.append((ref.line, f"{ref.field}: '{ref.entry}' is a directory; "
                                    "a file is needed here"))
    report.add(path, found)


async def check_values(report: Report, view: FileSource, path: str, doc: Document) -> None:
    """Validate a values file against the first ``values.schema.json`` beside or above it."""
    for directory in helm.chart_directories(path):
        entries = await view.listing(directory) or {}
        if entries.get(helm.SCHEMA_NAME) != "file":
            continue
        schema_path = posixpath.join(directory, helm.SCHEMA_NAME)
        schema_file = await _read(view, schema_path)
        if not isinstance(schema_file, RepoFile):
            return
        schema, problem = helm.load_schema(schema_file.text)
        if schema is None:
            assert problem is not None
            report.add(schema_path, [problem])
            return
        defaults = None
        defaults_path = posixpath.join(directory, helm.DEFAULTS_NAME)
        if entries.get(helm.DEFAULTS_NAME) == "file" and defaults_path != path:
            defaults_file = await _read(view, defaults_path)
            if isinstance(defaults_file, RepoFile):
                parsed = parse_documents(defaults_file.text)
                defaults = parsed.documents[0].data if parsed.ok and parsed.documents else None
        report.values_checked += 1
        report.add(path, helm.schema_findings(schema, schema_path, doc, defaults))
        return


async def run_config_check(ctx: Context, gh: GitHubAPI, full_name: str, policy: Policy | None,
                           head_sha: str, changed_paths: list[str],
                           default_branch: str = "main") -> list[Finding]:
    """Check the changed files at `head_sha` and post the check run on that commit."""
    report = await check_change(gh, full_name, policy, head_sha, changed_paths)
    if policy is not None:
        findings, notices = await build_findings(ctx, gh, full_name, policy, head_sha,
                                                 changed_paths[:MAX_FILES], default_branch)
        report.findings += findings
        report.notices += notices
        report.findings.sort(key=lambda f: (f.path, f.line, f.message))
    await _post(gh, full_name, head_sha, report, ctx)
    return report.findings


async def check_change(gh: GitHubAPI, full_name: str, policy: Policy | None, head_sha: str,
                       changed_paths: list[str], *, use_tree: bool = True) -> Report:
    """Every check of the change, without posting anything (``use_tree=False``: learn the
    layout from directory listings, as when GitHub truncates the tree)."""
    version = policy.kubernetes_version if policy is not None else latest_kubernetes_version()
    report = Report(kubernetes_version=version)
    view = RepoView(gh, full_name, head_sha, use_tree=use_tree)
    changed = changed_paths[:MAX_FILES]
    checked = [path for path in changed if is_checked(path)]
    reads = await asyncio.gather(*(_read(view, path) for path in checked))
    if any(may_hold_resources(path) for path in checked) and version:
        await asyncio.to_thread(prepare, version)
    changed_kustomizations = {
        path: parsed.documents for path, read in zip(checked, reads, strict=True)
        if kustomize.is_kustomization(path) and isinstance(read, RepoFile)
        and (parsed := parse_documents(read.text)).ok and parsed.documents}
    including = await _including_kustomizations(view, changed, changed_kustomizations)
    patches: set[str] = set()
    for path, doc in [*((p, d[0]) for p, d in changed_kustomizations.items()),
                      *including.items()]:
        patches |= kustomize.patch_targets(kustomize.references(doc, posixpath.dirname(path))[0])
    documents: dict[str, list[Document]] = {}
    for path, read in zip(checked, reads, strict=True):
        if isinstance(read, FileTooLarge):
            report.add(path, [(1, str(read))])
        elif read is not None:  # None: removed in this change
            patch = path in patches
            if len(read.text) < INLINE_BELOW:
                documents[path] = check_text(report, policy, path, read.text, patch=patch)
                await asyncio.sleep(0)  # CPU-bound: let the webhook endpoint answer in between
            else:  # a large file: its parse and validation must not hold the event loop
                part, documents[path] = await run_cpu(len(read.text), check_file, version,
                                                      policy, path, read.text, patch)
                report.merge(part)
    kustomizations = {path: docs[0] for path, docs in documents.items()
                      if kustomize.is_kustomization(path) and docs}
    kustomizations.update(including)
    values = {path: docs[0] for path, docs in documents.items()
              if helm.is_values_file(path) and len(docs) == 1}
    await asyncio.gather(
        *(check_kustomization(report, view, path, doc) for path, doc in kustomizations.items()),
        *(check_values(report, view, path, doc) for path, doc in values.items()),
    )
    report.findings.sort(key=lambda f: (f.path, f.line, f.message))
    report.notes.sort(key=lambda f: (f.path, f.line, f.message))
    return report


async def _post(gh: GitHubAPI, full_name: str, sha: str, report: Report, ctx: Context) -> None:
    """One run per commit: a job that runs again for the same commit (claimed from a replica
    killed after it posted, retried after a later step failed) posts nothing more; GitHub
    would append its annotations to the run's, and a second run would stand beside it."""
    async with ctx.locks.hold(f"config-check:{full_name}@{sha}"):
        if await own_run(gh, full_name, sha, CONFIG_CHECK, ctx.app_id, ctx.bot_login) is None:
            await _create(gh, full_name, sha, report, ctx)


async def _create(gh: GitHubAPI, full_name: str, sha: str, report: Report, ctx: Context) -> None:
    conclusion, title, summary = render(report)
    annotations = [f.annotation() for f in report.findings] + \
        [f.annotation("notice") for f in report.notices]
    summary = fit(summary, OUTPUT_LIMIT)
    created = await create_check_run(gh, full_name, sha, check_run(
        CONFIG_CHECK, check_output(title, summary,
                                   annotations=annotations[:ANNOTATIONS_PER_REQUEST]),
        conclusion=conclusion, completed_at=ctx.clock()))
    for start in range(ANNOTATIONS_PER_REQUEST, len(annotations), ANNOTATIONS_PER_REQUEST):
        await update_check_run(gh, full_name, int(created["id"]), {"output": check_output(
            title, summary, annotations=annotations[start:start + ANNOTATIONS_PER_REQUEST])})
