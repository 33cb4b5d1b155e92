"""What GitHub's manifest flow refuses: events the manifest's permissions do not cover.

GitHub requires each subscribed event's permission ("To subscribe to this event, a GitHub App
must have at least read-level access for the X permission", in each event's summary in
`@octokit/openapi-webhooks`, tabled in `event_permissions.json` by `make_event_permissions`) and
answers a manifest that lacks one with "Default events are not supported by permissions".
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from conveyor_emulator.errors import ApiError

TABLE = files(__package__) / "event_permissions.json"
_LEVEL = {"read": 1, "write": 2, "admin": 3}


@cache
def event_permissions() -> dict[str, Any]:
    events: dict[str, Any] = json.loads(TABLE.read_text(encoding="utf-8"))["events"]
    return events


def problems(manifest: dict[str, Any]) -> list[str]:
    """Why GitHub would refuse the manifest's events; empty when it would accept them."""
    granted = manifest.get("default_permissions") or {}
    events = manifest.get("default_events") or []
    if not isinstance(granted, dict) or not isinstance(events, list):
        return ["default_permissions must be a mapping and default_events a list"]
    table = event_permissions()
    unknown = [str(e) for e in events if str(e) not in table or not table[str(e)]["app"]]
    if unknown:
        return [f"Default events unsupported by GitHub Apps: {', '.join(unknown)}"]
    uncovered = []
    for event in map(str, events):
        need = table[event]
        if not need["permissions"]:
            continue
        if not any(_LEVEL.get(str(granted.get(name)), 0) >= _LEVEL[need["level"]]
                   for name in need["permissions"]):
            uncovered.append(event)
    if uncovered:
        return [f"Default events are not supported by permissions: {', '.join(uncovered)}"]
    return []


def check(manifest: dict[str, Any]) -> None:
    found = problems(manifest)
    if found:
        raise ApiError(422, "Invalid GitHub App configuration: " + "; ".join(found))
