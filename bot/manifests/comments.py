"""Comments that tie a scalar to an image: Flux setters and Conveyor markers.

Both are read from the comment that follows a value on its own line.

Flux image-automation setters::

    image: ghcr.io/acme/web:1.4.1 # {"$imagepolicy": "flux-system:web"}
    tag: 1.4.1 # {"$imagepolicy": "flux-system:web:tag"}
    repository: ghcr.io/acme/web # {"$imagepolicy": "flux-system:web:name"}
    digest: sha256:... # {"$imagepolicy": "flux-system:web:digest"}

A setter names an image *policy*, not an image: the values of one policy in a file form one
image, whose name is the full reference or the ``:name`` value.

Conveyor markers, for layouts the editor cannot recognise by their shape::

    appImage: ghcr.io/acme/web:1.4.1   # conveyor: ghcr.io/acme/web
    version: "1.4.1"                   # conveyor: ghcr.io/acme/web tag
    pin: sha256:...                    # conveyor: ghcr.io/acme/web digest
    repo: ghcr.io/acme/web             # conveyor: ghcr.io/acme/web name

The first word is the image name; the optional second word says which part of the image the
value holds: ``ref`` (the default: a whole ``name:tag@digest`` reference), ``tag``, ``digest``
or ``name``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

PARTS = ("ref", "name", "tag", "digest")

_COMMENT_RE = re.compile(r"[ \t]+#[ \t]*(?P<body>.*?)[ \t]*$")
_MARKER_RE = re.compile(r"conveyor:[ \t]*(?P<image>\S+)(?:[ \t]+(?P<part>\w+))?")


@dataclass(frozen=True)
class Setter:
    """A Flux setter: the value is ``part`` of the image of ``policy`` (``ns:name``)."""

    policy: str
    part: str


@dataclass(frozen=True)
class Marker:
    """A Conveyor marker: the value is ``part`` of ``image``."""

    image: str
    part: str


def parse_trailing_comment(rest_of_line: str) -> Setter | Marker | None:
    """Read a setter or marker from the text that follows a value on its line."""
    match = _COMMENT_RE.match(rest_of_line)
    if match is None:
        return None
    body = match.group("body")
    if body.startswith("{"):
        return _parse_setter(body)
    marker = _MARKER_RE.fullmatch(body)
    if marker is None:
        return None
    part = marker.group("part") or "ref"
    if part not in PARTS:
        return None
    return Marker(image=marker.group("image"), part=part)


def _parse_setter(body: str) -> Setter | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    policy = data.get("$imagepolicy")
    if not isinstance(policy, str):
        return None
    fields = policy.split(":")
    if len(fields) == 2:
        return Setter(policy=policy, part="ref")
    if len(fields) == 3 and fields[2] in ("name", "tag", "digest"):
        return Setter(policy=":".join(fields[:2]), part=fields[2])
    return None
