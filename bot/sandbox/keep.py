"""`--keep`: after the story the emulator and the bot keep serving, with the addresses to use,
a saved release to deliver with `python -m bot receive`, and the prompt."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from bot.domain.tags import version_from_tag
from bot.promotion.dashboard.issue import DASHBOARD_LABEL
from bot.sandbox.console import Console, prompt
from bot.sandbox.demo import artifact_digest
from bot.sandbox.plan import Plan
from bot.sandbox.runner import Sandbox
from bot.sandbox.stack import image_parts
from bot.sandbox.telling import Narrator


async def prepare_release_payload(sandbox: Sandbox, plan: Plan, folder: Path
                                  ) -> tuple[Path, str] | None:
    """A `release` event saved as GitHub would have sent it, for `python -m bot receive`, and
    what delivering it will do. A later release when the tag policy admits one (its image and
    release are published on the emulator, but the bot is not told); else the story's own
    release again, which opens nothing new."""
    em = sandbox.emulator
    tag = plan.next_tag
    if tag is not None:
        version = version_from_tag(tag)
        _registry, owner, package = image_parts(plan.service.image)
        saved = em.webhook_url
        em.webhook_url = None  # recorded by the emulator, delivered to no one
        try:
            await em.publish_container(owner, package,
                                       artifact_digest(plan.service, version), [version],
                                       source_repo=plan.service.source, emit=False)
            await em.create_tag(plan.service.source, tag, user=plan.cast.requester)
            await em.publish_release(plan.service.source, tag, author=plan.cast.requester)
            await em.settle()
        finally:
            em.webhook_url = saved
        effect = (f"release {tag} of {plan.service.source}; its image is published, Conveyor "
                  f"was not told: delivering it opens the promotion to {plan.entry.name}")
    else:
        effect = (f"release {plan.tag} of {plan.service.source} again: Conveyor opens nothing "
                  "new for a digest it has promoted (redeliveries are harmless)")
    # GitHub sends `published` and `released` for a published release; Conveyor acts on
    # `released` (and `prereleased`), so that is the one worth replaying.
    delivery = next((d for d in reversed(em.deliveries)
                     if d.event == "release" and d.action in ("released", "prereleased")), None)
    if delivery is None:
        return None
    path = folder / "release.json"
    path.write_text(json.dumps(delivery.payload, indent=2) + "\n", encoding="utf-8")
    return path, effect


async def keep_serving(sandbox: Sandbox, plan: Plan, narrator: Narrator, log_path: Path,
                       stop: asyncio.Event | None,
                       commands: asyncio.StreamReader | None = None) -> None:
    sandbox.clock.run()
    example = await prepare_release_payload(sandbox, plan, log_path.parent)
    say, em = narrator.line, sandbox.emulator
    say()
    say("The emulator and Conveyor keep running (Ctrl-C stops them):")
    say(f"  GitHub API (emulator):  {sandbox.api_url}")
    say(f"  pull requests (web):    {em.web_url}/{plan.deploy_repo}/pulls")
    for pr in em.pulls(plan.deploy_repo, state="all"):
        say(f"    #{pr['number']} {pr['title']}: {pr['html_url']}")
    for issue in em.issues(plan.deploy_repo, labels=[DASHBOARD_LABEL]):
        say(f"  dashboard:              {issue['html_url']}")
    say(f"  Conveyor webhook URL:   {sandbox.webhook_url}")
    say(f"  webhook secret:         {sandbox.secret}")
    say(f"  Conveyor's log:         {log_path}")
    say()
    say("Act as a person over HTTP (docs/sandbox.md lists every action), for example:")
    say(f"  curl -X POST {em.web_url}/_emulator/act/comment -d '{{\"repo\": "
        f"\"{plan.deploy_repo}\", \"number\": 1, \"user\": \"{plan.cast.requester}\", "
        f"\"body\": \"/status\"}}'")
    if example is not None:
        payload, effect = example
        say()
        say(f"Or deliver a saved release to Conveyor like GitHub would ({effect}):")
        say(f"  GITHUB_WEBHOOK_SECRET={sandbox.secret} python -m bot receive -e release "
            f"-p {payload} --url {sandbox.webhook_url}")
        say(f"then see the pull requests: {em.web_url}"
            f"/_emulator/state/pulls?repo={plan.deploy_repo}&state=all")
    stop = stop or asyncio.Event()
    if commands is not None:
        say()
        await prompt(Console(sandbox, plan, say), commands, stop)
    await wait_for_stop(stop)
    say("sandbox stopped")


async def stdin_lines() -> asyncio.StreamReader | None:
    """The terminal's lines, for the `--keep` prompt; None when stdin is no terminal."""
    if not sys.stdin.isatty():
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def wait_for_stop(stop: asyncio.Event) -> None:
    """Until `stop` is set, or SIGINT (Ctrl-C) or SIGTERM arrives."""
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            pass
    try:
        await stop.wait()
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
