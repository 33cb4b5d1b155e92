"""Build `octokit-webhook-examples.json.gz`: one example payload per (event, action) from the
npm package `@octokit/webhooks-examples`, for the bad-input tests.

Run from anywhere: `python tests/reliability/data/make_examples.py [--version X.Y.Z]`. Needs
`npm`, which installs the package into a temporary directory (the registry configured for npm
is used; nothing is installed into the project).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/webhooks-examples"
HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "octokit-webhook-examples.json.gz"


def build(version: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", tmp,
             f"{PACKAGE}@{version}"],
            check=True,
        )
        root = Path(tmp) / "node_modules" / PACKAGE
        installed = json.loads((root / "package.json").read_text(encoding="utf-8"))["version"]
        events = json.loads((root / "api.github.com" / "index.json").read_text(encoding="utf-8"))
    examples = []
    seen: set[tuple[str, object]] = set()
    for event in events:
        for payload in event["examples"]:
            key = (event["name"], payload.get("action"))
            if key in seen:
                continue
            seen.add(key)
            examples.append({"event": event["name"], "payload": payload})
    return {"package": PACKAGE, "version": installed, "examples": examples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--version", default="7.6.1")
    args = parser.parse_args()
    data = build(args.version)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    # mtime=0: the same input gives the same bytes
    OUTPUT.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    print(f"{OUTPUT.name}: {len(data['examples'])} examples from {PACKAGE}@{data['version']}")


if __name__ == "__main__":
    main()
