"""GitHub's global node ids (`node_id`), stable for a kind and a database id."""

from __future__ import annotations

import base64


def node_id(kind: str, ident: int | str) -> str:
    raw = f"{kind}:{ident}".encode()
    return kind[:2].upper() + "_" + base64.urlsafe_b64encode(raw).decode().rstrip("=")
