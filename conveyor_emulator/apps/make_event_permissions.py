"""Regenerate `event_permissions.json`: the permission a GitHub App needs for each webhook event.

GitHub states it in each event's summary in `@octokit/openapi-webhooks` ("To subscribe to this
event, a GitHub App must have at least read-level access for the "Merge queues" repository
permission."); the manifest flow refuses a manifest whose `default_events` lack it. The summary
names the permission as the settings page shows it ("Merge queues"); the manifest uses the key
of `app-permissions` in `@octokit/openapi` (`merge_queues`). `DISPLAY_NAMES` maps one to the
other and is checked against that schema, so a renamed permission fails here, not in a test.

    python -m conveyor_emulator.apps.make_event_permissions
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "event_permissions.json"
PACKAGES = ("@octokit/openapi-webhooks", "@octokit/openapi")

# Display name (and the scope the summary gives) → the `app-permissions` key.
DISPLAY_NAMES = {
    ("Actions", "repository"): "actions",
    ("Administration", "repository"): "administration",
    ("Administration", "organization"): "organization_administration",
    ("Checks", "repository"): "checks",
    ("Code scanning alerts", "repository"): "security_events",
    ("Commit statuses", "repository"): "statuses",
    ("Contents", "repository"): "contents",
    ("Custom properties", "organization"): "organization_custom_properties",
    ("Dependabot alerts", "repository"): "vulnerability_alerts",
    ("Deployments", "repository"): "deployments",
    ("Discussions", "repository"): "discussions",
    ("Issues", "repository"): "issues",
    ("Members", "organization"): "members",
    ("Merge queues", "repository"): "merge_queues",
    ("Metadata", "repository"): "metadata",
    ("Packages", "repository"): "packages",
    ("Pages", "repository"): "pages",
    ("Personal access token requests", "organization"):
        "organization_personal_access_token_requests",
    ("Projects", "repository"): "repository_projects",
    ("Projects", "organization"): "organization_projects",
    ("Pull requests", "repository"): "pull_requests",
    ("Repository security advisories", "repository"): "repository_advisories",
    ("Secret scanning alerts", "repository"): "secret_scanning_alerts",
}
# Permissions GitHub names in event summaries that `app-permissions` does not list.
NOT_IN_SCHEMA = {"repository_advisories"}

SENTENCE = re.compile(
    r'must have at least (read|write)-level access for the (.+?) permissions?\.', re.S)
NAME = re.compile(r'"([^"]+)"')


def pack(package: str, into: Path) -> Path:
    """`npm pack` the package into `into` and unpack it; the package's root directory."""
    done = subprocess.run(["npm", "pack", package, "--silent"], cwd=into, check=True,
                          capture_output=True, text=True)
    archive = into / done.stdout.strip().splitlines()[-1]
    target = into / package.replace("/", "_")
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def permissions_of(summary: str, known: set[str]) -> tuple[str, list[str]] | None:
    """(level, acceptable permission keys) from one summary, or None when it names none."""
    match = SENTENCE.search(summary)
    if match is None:
        return None
    level, phrase = match.group(1), match.group(2)
    names = NAME.findall(phrase)
    if names == ["Meta"]:
        return None  # the "Meta" app permission every app has
    scopes = [scope for scope in ("repository", "organization") if scope in phrase]
    keys = []
    for name in names:
        for scope in scopes or ["repository"]:
            key = DISPLAY_NAMES.get((name, scope))
            if key is not None:
                keys.append(key)
        if not any((name, scope) in DISPLAY_NAMES for scope in scopes or ["repository"]):
            raise SystemExit(f"unknown permission {name!r} ({phrase!r}): extend DISPLAY_NAMES")
    unknown = [k for k in keys if k not in known and k not in NOT_IN_SCHEMA]
    if unknown:
        raise SystemExit(f"{unknown} are not app-permissions keys: fix DISPLAY_NAMES")
    return level, keys


def build(webhooks: dict[str, Any], known: set[str]) -> dict[str, Any]:
    events: dict[str, Any] = {}
    for operation in (item["post"] for item in webhooks.values()):
        flags = operation["x-github"]
        event = flags["subcategory"].replace("-", "_")
        entry = events.setdefault(event, {"app": False, "permissions": [], "level": None})
        entry["app"] = entry["app"] or "app" in flags.get("supported-webhook-types", [])
        found = permissions_of(operation.get("summary", ""), known)
        if found is not None:
            entry["level"], entry["permissions"] = found
    return dict(sorted(events.items()))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        webhooks_root, rest_root = (pack(p, Path(tmp)) for p in PACKAGES)
        hooks = json.loads((webhooks_root / "generated" / "api.github.com.json").read_text())
        rest = json.loads((rest_root / "generated" / "api.github.com.json").read_text())
        version = json.loads((webhooks_root / "package.json").read_text())["version"]
    known = set(rest["components"]["schemas"]["app-permissions"]["properties"])
    table = {"source": f"@octokit/openapi-webhooks {version}, each event's summary",
             "events": build(hooks["webhooks"], known)}
    OUT.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n")
    print(f"{OUT}: {len(table['events'])} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
