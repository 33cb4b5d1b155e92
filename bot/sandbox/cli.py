"""`python -m bot sandbox [--config FILE] [--keep]`: the synchronous door to the story."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from .story import Options, run_sandbox


def run(*, config: Path | None = None, keep: bool = False, log_dir: Path | None = None) -> int:
    if config is not None and not config.is_file():
        print(f"{config}: no such file", file=sys.stderr)
        return 1
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
    return asyncio.run(run_sandbox(Options(config=config, keep=keep, log_dir=log_dir)))
