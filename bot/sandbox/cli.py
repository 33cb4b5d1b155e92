"""`python -m bot sandbox [--config FILE] [--service S] [--to ENV] [--keep]`: the synchronous
door to the story."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from bot.sandbox.story import Options, run_sandbox


def run(*, config: Path | None = None, keep: bool = False, log_dir: Path | None = None,
        service: str | None = None, to: str | None = None) -> int:
    if log_dir is not None:
        try:
            log_dir.mkdir(exist_ok=True)
            (log_dir / "conveyor.log").open("a", encoding="utf-8").close()
        except OSError as exc:
            print(f"conveyor sandbox: --log-dir {log_dir}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
    try:
        return asyncio.run(run_sandbox(Options(config=config, keep=keep, log_dir=log_dir,
                                                   service=service, to=to)))
    except BrokenPipeError:
        # the reader went away (`python -m bot sandbox | head`): stop quietly, as `cat` does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
