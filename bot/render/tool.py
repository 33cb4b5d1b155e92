"""Which kustomize builds overlays (`CONVEYOR_KUSTOMIZE`), and how it is described."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass

KUSTOMIZE_SETTING = "CONVEYOR_KUSTOMIZE"
OFF = "off"


@dataclass(frozen=True)
class Kustomize:
    """The command that builds one overlay when given its folder (``kustomize build``,
    ``kubectl kustomize``, or the setting's own words)."""

    command: tuple[str, ...]

    def describe(self) -> str:
        return shlex.join(self.command)


def find_kustomize(setting: str | None,
                   which: Callable[[str], str | None] = shutil.which) -> Kustomize | None:
    """The kustomize of ``setting``; without one, ``kustomize build`` when ``kustomize`` is on
    the PATH, else ``kubectl kustomize``, else None (rendering is off). ``off`` turns rendering
    off. Raises ValueError with a one-line reason when the named command is not there."""
    if setting is None or not setting.strip():
        if which("kustomize"):
            return Kustomize(("kustomize", "build"))
        if which("kubectl"):
            return Kustomize(("kubectl", "kustomize"))
        return None
    if setting.strip().lower() == OFF:
        return None
    try:
        words = tuple(shlex.split(setting))
    except ValueError as exc:
        raise ValueError(f"cannot be split into words: {exc}") from None
    if which(words[0]) is None:
        raise ValueError(f"{words[0]} is not an executable on the PATH")
    return Kustomize(words)


def rendering_text(tool: Kustomize | None) -> str:
    """What `/healthz` and the start-up log say about rendering."""
    if tool is None:
        return "off (no kustomize: Kustomize environments are judged file by file)"
    return f"on ({tool.describe()})"
