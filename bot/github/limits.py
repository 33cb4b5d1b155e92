"""GitHub's size limits on what an app writes, and the one place every text is measured.

- issue and pull request bodies, and comments: 65,536 characters;
- check-run `output.summary` and `output.text`: 65,535 characters (`maxLength` in GitHub's
  description of Create/Update a check run);
- annotations: 50 per check-run request (more go in further updates of the same run).
Renderers shorten or split their own text with `fit`; the client refuses (`TextTooLong`,
before sending) any request that would still be over a limit, so that GitHub's 422 is never
the first to notice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import gidgethub

BODY_LIMIT = 65_536
OUTPUT_LIMIT = 65_535
ANNOTATIONS_PER_REQUEST = 50

_TRAILING_MARKERS = re.compile(r"(?:\s*<!--.*?-->)+\s*\Z", re.S)
SHORTENED = "\n\n…(shortened to fit GitHub's limit of {limit:,} characters)"


class TextTooLong(gidgethub.GitHubException):
    """A request whose text is over one of GitHub's limits; it is not sent."""


def fit(text: str, limit: int = BODY_LIMIT) -> str:
    """`text` if it fits, else its beginning, a note, and its trailing hidden markers (which
    later runs look for), within `limit` characters."""
    if len(text) <= limit:
        return text
    match = _TRAILING_MARKERS.search(text)
    tail = match.group(0) if match else ""
    note = SHORTENED.format(limit=limit)
    keep = max(0, limit - len(note) - len(tail))
    return text[:keep] + note + tail


def over_limit(data: Any) -> str | None:
    """Which field of a request body is over GitHub's limit, or None."""
    if not isinstance(data, Mapping):
        return None
    body = data.get("body")
    if isinstance(body, str) and len(body) > BODY_LIMIT:
        return f"body has {len(body):,} characters (GitHub's limit is {BODY_LIMIT:,})"
    output = data.get("output")
    if isinstance(output, Mapping):
        for field in ("summary", "text"):
            value = output.get(field)
            if isinstance(value, str) and len(value) > OUTPUT_LIMIT:
                return (f"output.{field} has {len(value):,} characters (GitHub's limit is "
                        f"{OUTPUT_LIMIT:,})")
        annotations = output.get("annotations")
        if isinstance(annotations, list) and len(annotations) > ANNOTATIONS_PER_REQUEST:
            return (f"{len(annotations)} annotations in one request (GitHub takes "
                    f"{ANNOTATIONS_PER_REQUEST})")
    return None
