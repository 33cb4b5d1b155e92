"""The `--keep` prompt of the sandbox: what each command says when it cannot be done, and the
deployment report it makes for an environment, on the demo organisation."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

from bot.sandbox.story import Options, run_sandbox


async def prompt_session(tmp_path: Path, lines: list[str]) -> str:
    """The demo story with `--keep`, then `lines` typed at its prompt: what they printed."""
    commands = asyncio.StreamReader()
    out = io.StringIO()
    task = asyncio.create_task(run_sandbox(Options(keep=True, log_dir=tmp_path), out=out,
                                           stop=asyncio.Event(), commands=commands))
    for _ in range(1200):
        if "Type `help`" in out.getvalue() or task.done():
            break
        await asyncio.sleep(0.05)
    played = out.getvalue()
    assert "Type `help`" in played, played
    for line in [*lines, "quit"]:
        commands.feed_data(f"{line}\n".encode())
    assert await asyncio.wait_for(task, 60) == 0
    return out.getvalue()[len(played):]


async def test_the_prompt_explains_what_it_cannot_do(tmp_path: Path) -> None:
    said = await prompt_session(tmp_path, [
        "", "help", "comment 999 /promote production", "approve #999 bob", "wait soon",
        "deploy staging", "deploy production", "comment 1 @dave hello",
    ])
    assert "  help, quit" in said and "  deploy staging  " in said
    assert "  ✗ no pull request #999 in acme/deploy" in said
    assert "  ✗ invalid duration 'soon'" in said
    # staging is reported the way production's gate expects it: Argo CD's commit status
    assert re.search(r"  argocd\[bot\] posted argocd/web-staging: success on main@[0-9a-f]{7}",
                     said), said
    # production has no downstream environment: a deployment records it
    assert re.search(r"  argocd\[bot\] recorded a deployment to production of main@[0-9a-f]{7}",
                     said), said
    assert "  Conveyor did not reply" in said  # dave's comment is no command
    assert said.endswith("sandbox stopped\n")
