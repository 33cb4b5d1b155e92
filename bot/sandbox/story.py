"""`python -m bot sandbox`: a release travels staging → production, told as it happens.

The story acts only as people and CI would on GitHub (publish an image, publish a release,
comment, report a deployment, review, merge) and then reads what the real bot did in the
emulator: pull requests, check runs, replies, deployments, the dashboard issue. Nothing of the
bot is called directly except its timer wheel, which the story fires after moving the shared
clock ("30 minutes pass" takes no time).

With `--config FILE` the same story is played with the user's own policy and the files it
names (see `plan.py`): one service, from its entry environment through every gated
environment up to `--to`; steps the policy does not call for are skipped, and said so.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot.domain.policy import PolicyError
from bot.domain.write_budget import WriteBudget
from bot.sandbox.acts import Story, StoryFailed
from bot.sandbox.botlog import logged_errors
from bot.sandbox.keep import keep_serving, stdin_lines
from bot.sandbox.plan import (
    Plan,
    PlanError,
    Unplayable,
    describe_policy,
    plan_demo,
    plan_from_config,
)
from bot.sandbox.reading import content_writes
from bot.sandbox.runner import logs_to_file, start_sandbox
from bot.sandbox.stack import SandboxError, image_parts
from bot.sandbox.telling import Narrator
from bot.sandbox.world import registry_hosts, seed_world
from bot.text import short_digest
from conveyor_emulator.errors import ApiError


@dataclass(frozen=True)
class Options:
    config: Path | None = None
    keep: bool = False
    log_dir: Path | None = None
    service: str | None = None
    to: str | None = None


def choose_plan(options: Options, narrator: Narrator) -> Plan | None:
    if options.config is not None:
        chosen = plan_from_config(options.config, options.service, options.to)
        if isinstance(chosen, Unplayable):
            for line in chosen.lines:
                narrator.line(line)
            return None
        return chosen
    try:
        return plan_demo(options.service, options.to)
    except PlanError as exc:
        narrator.line(f"the demo policy: {exc}")
    except PolicyError as exc:  # the bundled demo is broken: a bug, not the user's
        narrator.line(f"the demo policy is invalid: {exc.issues}")
    return None


async def run_sandbox(options: Options, out: TextIO | None = None,
                      stop: asyncio.Event | None = None,
                      commands: asyncio.StreamReader | None = None) -> int:
    """Play the story; 0 when every step happened. With `keep`, serve until `stop` is set (or
    the task is cancelled, as Ctrl-C does)."""
    started = time.monotonic()
    narrator = Narrator(out or sys.stdout)
    plan = choose_plan(options, narrator)
    if plan is None:
        return 1
    try:
        image_parts(plan.service.image)
    except SandboxError as exc:
        narrator.line(str(exc))
        return 1
    folder = options.log_dir or Path(tempfile.mkdtemp(prefix="conveyor-sandbox-"))
    status = 1
    try:
        with logs_to_file(folder) as log_path:
            if options.keep and commands is None:
                commands = await stdin_lines()
            status = await _play(options, plan, narrator, log_path, started, stop, commands)
    finally:
        if options.log_dir is None and status == 0:
            shutil.rmtree(folder, ignore_errors=True)  # a failed run keeps its log to read
    return status


async def _play(options: Options, plan: Plan, narrator: Narrator, log_path: Path,
                started: float, stop: asyncio.Event | None,
                commands: asyncio.StreamReader | None) -> int:
    sandbox = await start_sandbox(registries=registry_hosts(plan))
    try:
        await seed_world(sandbox, plan)
        where = (f"{options.config}" if options.config else "the demo policy")
        narrator.line(f"Conveyor sandbox: GitHub emulator at {sandbox.api_url}, "
                      f"Conveyor at {sandbox.webhook_url}")
        narrator.line(f"{plan.deploy_repo} with {where}:")
        for line in describe_policy(plan):
            narrator.line(f"  {line}")
        for env in (*plan.entries, *plan.chain):
            path = plan.path(env)
            if path not in plan.files:
                narrator.line(f"  note: {path} is not in the folder of the policy; "
                              "Conveyor will report that it cannot promote into it")
        if plan.previous is not None:
            narrator.line(f"  running in {plan.target.name} today: {plan.service.name} "
                          f"{plan.previous[0] or '(no tag)'} ({short_digest(plan.previous[1])})")
        elif plan.live:
            running = ", ".join(f"{version} in {env}" for env, version in plan.live.items())
            narrator.line(f"  running today: {plan.service.name} {running}")
        narrator.line()
        story = Story(sandbox, plan, narrator, log_path)
        failure: str | None = None
        try:
            await story.play()
        except StoryFailed as exc:
            failure = str(exc)
        except SandboxError as exc:
            failure = f"the sandbox broke: {exc}"
        except ApiError as exc:
            failure = f"the emulator refused an action of the story: {exc.status} {exc.message}"
        elapsed = time.monotonic() - started
        narrator.line()
        if failure is not None:
            narrator.line(f"FAILED at step {narrator.step_number}: {failure}")
        for problem in narrator.problems:
            narrator.line(f"FAILED: {problem}")
        ok = failure is None and not narrator.problems
        em = sandbox.emulator
        narrator.line(f"{'Story played' if ok else 'Story stopped'} in {elapsed:.1f}s "
                      f"(sandbox clock {sandbox.clock.start:%H:%M} → {sandbox.clock():%H:%M} "
                      f"UTC): {len(em.deliveries)} webhooks delivered, "
                      f"{len(em.requests.entries)} GitHub API requests by Conveyor.")
        narrator.line(f"{content_writes(em.requests.entries)} of those requests were writes "
                      "(POST, PATCH, PUT, DELETE): GitHub allows an installation "
                      f"{WriteBudget.per_minute} a minute and {WriteBudget.per_hour} an hour.")
        errors = logged_errors(log_path)
        if ok and not errors and options.log_dir is None and not options.keep:
            narrator.line("Conveyor's log goes with the run's temporary folder "
                          "(--log-dir DIR keeps it).")
        else:
            narrator.line(f"Conveyor's log: {log_path}" + (
                f" ({len(errors)} error(s) logged, first: {errors[0]})" if errors else ""))
        if options.keep:
            await keep_serving(sandbox, plan, narrator, log_path, stop, commands)
        return 0 if ok else 1
    finally:
        await sandbox.close()
