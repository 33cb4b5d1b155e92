"""`python -m bot sandbox | head -1`: when the reader goes away the sandbox stops quietly, as
`cat` does (exit 1, no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.botprocess import REPO_ROOT


def test_a_reader_that_goes_away_stops_the_sandbox_quietly(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    process = subprocess.Popen([sys.executable, "-m", "bot", "sandbox"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    assert first.strip(), "the sandbox printed nothing"
    process.stdout.close()  # `head -1` exits
    try:
        code = process.wait(120)
    finally:
        if process.poll() is None:
            process.kill()
    errors = process.stderr.read().decode(errors="replace")
    assert code == 1, errors
    assert "Traceback" not in errors and "BrokenPipeError" not in errors
