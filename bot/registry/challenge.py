"""`WWW-Authenticate` challenges as registries send them (RFC 7235 auth-params)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PARAM = re.compile(r'\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^,\s]*)\s*,?')


@dataclass(frozen=True)
class Challenge:
    scheme: str  # lower case: "bearer" | "basic"
    params: dict[str, str] = field(default_factory=dict)


def parse_challenge(header: str) -> Challenge | None:
    """The first challenge of a header value; None when there is none."""
    text = header.strip()
    if not text:
        return None
    scheme, _, rest = text.partition(" ")
    params: dict[str, str] = {}
    position = 0
    while position < len(rest):
        match = _PARAM.match(rest, position)
        if match is None or match.end() == position:
            break
        value = match.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params[match.group(1).lower()] = value
        position = match.end()
    return Challenge(scheme.lower(), params)
