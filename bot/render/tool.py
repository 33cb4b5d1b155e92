"""Which kustomize builds overlays (`CONVEYOR_KUSTOMIZE`) and which Helm renders charts
(`CONVEYOR_HELM`), and how they are described."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass

KUSTOMIZE_SETTING = "CONVEYOR_KUSTOMIZE"
HELM_SETTING = "CONVEYOR_HELM"
OFF = "off"


@dataclass(frozen=True)
class Kustomize:
    """The command that builds one overlay when given its folder (``kustomize build``,
    ``kubectl kustomize``, or the setting's own words)."""

    command: tuple[str, ...]

    def describe(self) -> str:
        return shlex.join(self.command)


@dataclass(frozen=True)
class Helm:
    """The Helm that renders charts (``helm template``) and inflates Kustomize ``helmCharts``:
    ``executable`` is its absolute path (kustomize's ``--helm-command`` takes one word)."""

    executable: str

    def describe(self) -> str:
        return self.executable


def _words(setting: str, which: Callable[[str], str | None]) -> tuple[str, ...]:
    try:
        words = tuple(shlex.split(setting))
    except ValueError as exc:
        raise ValueError(f"cannot be split into words: {exc}") from None
    if which(words[0]) is None:
        raise ValueError(f"{words[0]} is not an executable on the PATH")
    return words


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
    return Kustomize(_words(setting, which))


def find_helm(setting: str | None,
              which: Callable[[str], str | None] = shutil.which) -> Helm | None:
    """The Helm of ``setting`` (a command on the PATH or a path); without one, ``helm`` when it
    is on the PATH, else None (chart rendering is off). ``off`` turns chart rendering off.
    Raises ValueError with a one-line reason when the named command is not there."""
    if setting is None or not setting.strip():
        found = which("helm")
        return Helm(found) if found else None
    if setting.strip().lower() == OFF:
        return None
    words = _words(setting, which)
    if len(words) > 1:
        raise ValueError("names the helm executable alone, without arguments")
    return Helm(which(words[0]) or words[0])


def rendering_text(tool: Kustomize | None) -> str:
    """What `/healthz` and the start-up log say about Kustomize rendering."""
    if tool is None:
        return "off (no kustomize: Kustomize environments are judged file by file)"
    return f"on ({tool.describe()})"


def chart_rendering_text(helm: Helm | None) -> str:
    """What `/healthz` and the start-up log say about chart rendering."""
    if helm is None:
        return ("off (no helm: chart environments are judged file by file, and a change to "
                "another file of a gated chart fails the gate)")
    return f"on ({helm.describe()} template)"
