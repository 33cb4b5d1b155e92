"""A command's arguments checked: an environment, a service or group, a tag or a digest, with
the "did you mean" of a misspelt name."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}", re.IGNORECASE)


def quote(value: str) -> str:
    shown = value if len(value) <= 64 else value[:63] + "…"
    return f"'{shown}'"


def suggest(value: str, choices: Sequence[str]) -> str | None:
    folded = {choice.casefold(): choice for choice in choices}
    if value.casefold() in folded:
        return folded[value.casefold()]
    prefixed = [c for c in choices if len(value) >= 2 and c.casefold().startswith(value.casefold())]
    if len(prefixed) == 1:
        return prefixed[0]
    close = difflib.get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def unknown(kind: str, plural: str, value: str, choices: Sequence[str]) -> str:
    if not choices:
        return f"unknown {kind} {quote(value)}; no {plural} are configured"
    message = f"unknown {kind} {quote(value)}; {plural} are: {', '.join(choices)}"
    suggestion = suggest(value, choices)
    return f"{message}; did you mean {quote(suggestion)}?" if suggestion else message


def check_environment(value: str, environments: Sequence[str]) -> str | None:
    if value in environments:
        return None
    return unknown("environment", "environments", value, environments)


def check_service(
    value: str, services: Sequence[str], groups: Sequence[str] = ()
) -> str | None:
    if value in services:
        return None
    if groups:
        return unknown("service or group", "services and groups", value, [*services, *groups])
    return unknown("service", "services", value, services)


def check_ref(value: str) -> str | None:
    if DIGEST_RE.fullmatch(value) or TAG_RE.fullmatch(value):
        return None
    return (
        f"{quote(value)} is not a tag or a digest: a tag is 1 to 128 letters, digits, "
        "'_', '.' or '-' (not starting with '.' or '-'); a digest is sha256:<64 hex digits>"
    )


def normal_ref(value: str) -> str:
    return value.lower() if DIGEST_RE.fullmatch(value) else value
