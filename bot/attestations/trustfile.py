"""`CONVEYOR_SIGSTORE_TRUST`: the file of trusted roots, read without loading a Sigstore
library, so that the intake process of `python -m bot serve` can read its settings and stay
small. Whether the roots in it can be used is `bot.attestations.roots.load_roots_text`'s to say
(`bot.runtime.settings.check_trust_roots`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SETTING = "CONVEYOR_SIGSTORE_TRUST"


class RootError(Exception):
    """A trusted root that cannot be used; the message says why, on one line."""


@dataclass(frozen=True)
class TrustFile:
    """`CONVEYOR_SIGSTORE_TRUST`: where the roots were read, and their text."""

    origin: str
    text: str


def read_trust_text(path: str) -> TrustFile:
    """The file's text; `RootError` naming the file when it cannot be read."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RootError(f"{path}: cannot be read: {reason}") from None
    return TrustFile(path, text)
