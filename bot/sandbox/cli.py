"""`python -m bot sandbox [--config FILE] [--keep]`: the synchronous door to the story."""

from __future__ import annotations

import asyncio
from pathlib import Path

from .story import Options, run_sandbox


def run(*, config: Path | None = None, keep: bool = False, log_dir: Path | None = None) -> int:
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
    return asyncio.run(run_sandbox(Options(config=config, keep=keep, log_dir=log_dir)))
