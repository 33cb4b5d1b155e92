"""Regenerate the trimmed GitHub REST and webhook descriptions the emulator is checked against.

Installs the npm packages `@octokit/openapi` and `@octokit/openapi-webhooks` into a temporary
directory, keeps only the operations the emulator serves (method + path template, read from the
emulator's own route table) and the webhook events it emits, plus every component schema they
reference, and writes `github-rest.trimmed.json`, `github-webhooks.trimmed.json` and
`not-for-apps.json` (the served operations GitHub refuses to installation tokens; the emulator
reads it even when it validates nothing) next to this module, as the package's data. The
component `$ref`s are kept (not inlined) so the files stay small.

    python -m conveyor_emulator.make_trimmed        # installs the packages with npm
    python -m conveyor_emulator.make_trimmed DIR    # DIR/openapi, DIR/openapi-webhooks unpacked

Each operation keeps its `x-github.enabledForGitHubApps` flag (the emulator refuses
installation tokens where it is false); the rest of `x-github` is dropped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from conveyor_emulator.app import ROUTER
from conveyor_emulator.openapi import REST_FILE, WEBHOOK_KEYS, WEBHOOKS_FILE

HERE = Path(__file__).resolve().parent
NOT_FOR_APPS = HERE / "not-for-apps.json"
PACKAGES = ["@octokit/openapi", "@octokit/openapi-webhooks"]
METHODS = {"get", "put", "post", "patch", "delete"}
GENERATOR = "python -m conveyor_emulator.make_trimmed"


def install(target: Path) -> Path:
    subprocess.run(["npm", "init", "-y"], cwd=target, check=True, capture_output=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", *PACKAGES], cwd=target,
                   check=True, capture_output=True)
    return target / "node_modules" / "@octokit"


def refs_in(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            found.add(ref)
        for value in node.values():
            refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            refs_in(value, found)


def keep_components(doc: dict[str, Any], roots: Any) -> dict[str, Any]:
    """The components transitively referenced from `roots`."""
    pending: set[str] = set()
    refs_in(roots, pending)
    seen: set[str] = set()
    components: dict[str, dict[str, Any]] = {}
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, section, name = ref.split("/", 3)
        value = doc["components"][section][name]
        components.setdefault(section, {})[name] = value
        more: set[str] = set()
        refs_in(value, more)
        pending |= more - seen
    return {k: dict(sorted(v.items())) for k, v in sorted(components.items())}


def trim_rest(spec: dict[str, Any]) -> dict[str, Any]:
    served = {(m.lower(), t) for m, t in ROUTER.templates()}
    paths: dict[str, Any] = {}
    missing = []
    for method, template in sorted(served):
        item = spec["paths"].get(template)
        if item is None or method not in item:
            missing.append(f"{method.upper()} {template}")
            continue
        entry = paths.setdefault(template, {})
        if "parameters" in item:
            entry["parameters"] = item["parameters"]
        op = dict(item[method])
        flags = op.get("x-github") or {}
        for noisy in ("description", "x-github", "externalDocs"):
            op.pop(noisy, None)
        # The one x-github flag the emulator enforces: GitHub refuses installation tokens
        # on operations it marks `enabledForGitHubApps: false`.
        if "enabledForGitHubApps" in flags:
            op["x-github"] = {"enabledForGitHubApps": flags["enabledForGitHubApps"]}
        entry[method] = op
    if missing:
        print("not in GitHub's description (not validated):", *missing, sep="\n  ")
    return {
        "openapi": spec["openapi"],
        "info": {**spec["info"], "x-trimmed-by": GENERATOR},
        "paths": paths,
        "components": keep_components(spec, paths),
    }


def trim_webhooks(spec: dict[str, Any]) -> dict[str, Any]:
    webhooks = {k: spec["webhooks"][k] for k in sorted(WEBHOOK_KEYS) if k in spec["webhooks"]}
    for value in webhooks.values():
        post = value.get("post", {})
        for noisy in ("description", "summary", "externalDocs"):
            post.pop(noisy, None)
    return {
        "openapi": spec["openapi"],
        "info": {**spec["info"], "x-trimmed-by": GENERATOR},
        "webhooks": webhooks,
        "components": keep_components(spec, webhooks),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(sys.argv[1]) if len(sys.argv) > 1 else install(Path(tmp))
        rest = json.loads((root / "openapi" / "generated" / "api.github.com.json").read_text())
        hooks = json.loads(
            (root / "openapi-webhooks" / "generated" / "api.github.com.json").read_text())
        versions = {p: json.loads((root / p.split("/")[1] / "package.json").read_text())["version"]
                    for p in PACKAGES}
    trimmed_rest = trim_rest(rest)
    trimmed_rest["info"]["x-source-package"] = f"@octokit/openapi@{versions[PACKAGES[0]]}"
    trimmed_hooks = trim_webhooks(hooks)
    trimmed_hooks["info"]["x-source-package"] = (
        f"@octokit/openapi-webhooks@{versions[PACKAGES[1]]}")
    refused = sorted(
        f"{method.upper()} {template}" for template, item in trimmed_rest["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and op.get("x-github", {}).get("enabledForGitHubApps") is False)
    NOT_FOR_APPS.write_text(json.dumps({
        "source": trimmed_rest["info"]["x-source-package"],
        "operations": refused}, indent=1) + "\n")
    print(f"wrote {NOT_FOR_APPS} ({len(refused)} operations)")
    for name, doc in ((REST_FILE, trimmed_rest), (WEBHOOKS_FILE, trimmed_hooks)):
        path = HERE / name
        path.write_text(json.dumps(doc, indent=None, separators=(",", ":"), sort_keys=False)
                        + "\n")
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
