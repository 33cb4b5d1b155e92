"""Check run `conveyor/config-check`: what a change to the deployment repository breaks.

Every changed YAML file must parse (all documents); in files that hold a service's image for
an environment, every image reference must be under `allowed_images`, and the service's image
must be pinned by digest in gated environments; a changed policy file must be valid. Findings
are annotations on the offending lines.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gidgethub.abc import GitHubAPI
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from ..domain.images import image_allowed, same_image
from ..domain.policy import Policy, PolicyError, load_policy
from ..github.repos import FileTooLarge, get_file
from ..manifests import ManifestError, find_all_images
from .policies import POLICY_PATH

if TYPE_CHECKING:
    from ..context import Context

log = logging.getLogger(__name__)

CONFIG_CHECK = "conveyor/config-check"
MAX_FILES = 300
ANNOTATIONS_PER_REQUEST = 50  # GitHub's limit per create/update call


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    message: str

    def annotation(self) -> dict[str, object]:
        return {"path": self.path, "start_line": self.line, "end_line": self.line,
                "annotation_level": "failure", "message": self.message[:1000]}


def yaml_findings(path: str, text: str) -> list[Finding]:
    loader = YAML(typ="safe", pure=True)
    try:
        for _document in loader.load_all(text):
            pass
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        return [Finding(path, line, f"YAML does not parse: {exc.problem or exc.context}")]
    except YAMLError as exc:
        return [Finding(path, 1, f"YAML does not parse: {exc}")]
    return []


def image_findings(policy: Policy, path: str, text: str) -> list[Finding]:
    owners = policy.environment_for_path(path)
    if not owners:
        return []
    try:
        occurrences = find_all_images(text, path=path)
    except ManifestError as exc:
        return [Finding(path, exc.line, exc.message)]
    findings = []
    for occurrence in occurrences:
        if not image_allowed(occurrence.name, policy.allowed_images):
            findings.append(Finding(path, occurrence.line,
                                    f"{occurrence.name} is not under allowed_images "
                                    f"({', '.join(policy.allowed_images)})"))
            continue
        for service, env in owners:
            if env.gated and same_image(occurrence.name, service.image) and \
                    occurrence.digest is None:
                findings.append(Finding(
                    path, occurrence.line,
                    f"{service.name} must be pinned by digest in {env.name} "
                    f"(gated by {env.after}): use TAG@sha256:…",
                ))
    return findings


def policy_findings(text: str) -> list[Finding]:
    try:
        load_policy(text, POLICY_PATH)
    except PolicyError as exc:
        return [Finding(POLICY_PATH, issue.line, f"{issue.column}: {issue.message}")
                for issue in exc.issues]
    return []


def findings_for_file(policy: Policy | None, path: str, text: str) -> list[Finding]:
    if path == POLICY_PATH:
        return policy_findings(text)
    found = yaml_findings(path, text)
    if not found and policy is not None:
        found = image_findings(policy, path, text)
    return found


async def run_config_check(ctx: Context, gh: GitHubAPI, repo: str, policy: Policy | None,
                           head_sha: str, changed_paths: list[str]) -> list[Finding]:
    """Check the changed files at `head_sha` and post the check run on that commit."""
    findings: list[Finding] = []
    checked = 0
    for path in changed_paths[:MAX_FILES]:
        if not path.endswith((".yaml", ".yml")):
            continue
        try:
            current = await get_file(gh, repo, path, head_sha)
        except FileTooLarge as exc:
            findings.append(Finding(path, 1, str(exc)))
            continue
        if current is None:
            continue  # removed
        checked += 1
        findings += findings_for_file(policy, path, current.text)
    await _post(gh, repo, head_sha, findings, checked, ctx)
    return findings


async def _post(gh: GitHubAPI, repo: str, sha: str, findings: list[Finding], checked: int,
                ctx: Context) -> None:
    if findings:
        title = f"{len(findings)} problem(s) in {len({f.path for f in findings})} file(s)"
        summary_lines = [f"- `{f.path}` line {f.line}: {f.message}" for f in findings[:100]]
        summary = "\n".join(summary_lines)
        conclusion = "failure"
    else:
        title = f"{checked} YAML file(s) checked, no problems"
        summary = "Every changed YAML file parses, and image references follow the policy."
        conclusion = "success"
    annotations = [f.annotation() for f in findings]
    output = {"title": title, "summary": summary[:60_000],
              "annotations": annotations[:ANNOTATIONS_PER_REQUEST]}
    created = await gh.post(f"/repos/{repo}/check-runs", data={
        "name": CONFIG_CHECK, "head_sha": sha, "status": "completed",
        "conclusion": conclusion, "output": output,
        "completed_at": ctx.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
    })
    for start in range(ANNOTATIONS_PER_REQUEST, len(annotations), ANNOTATIONS_PER_REQUEST):
        await gh.patch(f"/repos/{repo}/check-runs/{created['id']}", data={"output": {
            "title": title, "summary": output["summary"],
            "annotations": annotations[start:start + ANNOTATIONS_PER_REQUEST],
        }})
