"""The `--keep` prompt: act as the people and tools of the sandbox, one line at a time.

    comment 2 /promote production      alice comments on #2 (`comment 2 @bob /hold` as bob)
    approve 2 bob                      bob approves #2
    merge 2 [bob]                      merges #2 (as the story's merger by default)
    deploy staging                     the deployment tool reports staging synced
    wait 30m                           the sandbox clock moves on; due timers fire
    prs                                every pull request with its gate and link
    help, quit

Each line goes through the emulator exactly as the story's own steps do (the control API's
`act` endpoints, documented in docs/sandbox.md, do the same over HTTP); what Conveyor did
in answer is printed after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.domain.deployed import fill_context
from bot.domain.durations import parse_duration
from bot.names import GATE_CHECK
from bot.sandbox.plan import Plan
from bot.sandbox.reading import gate_of, gate_text, reply_to
from bot.sandbox.runner import Sandbox
from conveyor_emulator.errors import ApiError

HELP = [line.strip() for line in (__doc__ or "").splitlines()[2:9]]


class Refused(Exception):
    """A line that cannot be done; the message says why."""


@dataclass
class Console:
    sandbox: Sandbox
    plan: Plan
    say: Callable[[str], None]

    @property
    def repo(self) -> str:
        return self.plan.deploy_repo

    def pull(self, text: str) -> dict[str, Any]:
        number = int(text.removeprefix("#")) if text.removeprefix("#").isdigit() else -1
        found = next((pr for pr in self.sandbox.emulator.pulls(self.repo, state="all")
                      if pr["number"] == number), None)
        if found is None:
            raise Refused(f"no pull request #{text.removeprefix('#')} in {self.repo}")
        return found

    def gate(self, pr: dict[str, Any]) -> str:
        return gate_text(gate_of(self.sandbox, self.repo, pr))

    def known_pulls(self) -> set[int]:
        return {pr["number"] for pr in self.sandbox.emulator.pulls(self.repo, state="all")}

    async def run(self, line: str) -> bool:
        """Do one line; False when it asks to stop."""
        words = line.split()
        if not words:
            return True
        verb, args = words[0].lower(), words[1:]
        if verb in ("quit", "exit"):
            return False
        before = self.known_pulls()
        try:
            await self.act(verb, args)
        except Refused as exc:
            self.say(f"  ✗ {exc}")
            return True
        except ApiError as exc:
            self.say(f"  ✗ the emulator refused it: {exc.status} {exc.message}")
            return True
        await self.sandbox.settle()
        for pr in self.sandbox.emulator.pulls(self.repo, state="all"):
            if pr["number"] not in before:
                self.say(f'  Conveyor opened #{pr["number"]} "{pr["title"]}": {pr["html_url"]}')
        return True

    async def act(self, verb: str, args: list[str]) -> None:
        em, plan = self.sandbox.emulator, self.plan
        if verb == "help":
            for line in HELP:
                self.say(f"  {line}")
        elif verb == "prs":
            for pr in em.pulls(self.repo, state="all"):
                state = "merged" if pr["merged"] else pr["state"]
                self.say(f'  #{pr["number"]} {pr["title"]} ({state}) {pr["html_url"]}')
                if state == "open":
                    self.say(f"      {self.gate(pr)}")
        elif verb == "comment" and len(args) >= 2:
            pr = self.pull(args[0])
            author, text = plan.cast.requester, args[1:]
            if text[0].startswith("@") and len(text) > 1:
                author, text = text[0][1:], text[1:]
            posted = await em.comment(self.repo, pr["number"], author, " ".join(text))
            await self.sandbox.settle()
            reply = reply_to(self.sandbox, self.repo, pr["number"], posted["id"])
            self.say(f"  Conveyor replied: {reply}" if reply else "  Conveyor did not reply")
        elif verb == "approve" and len(args) == 2:
            pr = self.pull(args[0])
            await em.review(self.repo, pr["number"], args[1], "APPROVE", body="Ship it")
            await self.sandbox.settle()
            self.say(f"  {self.gate(pr)}")
        elif verb == "merge" and len(args) in (1, 2):
            pr = self.pull(args[0])
            gate = gate_of(self.sandbox, self.repo, pr)
            await em.merge_pull(self.repo, pr["number"],
                                user=args[1] if len(args) == 2 else plan.cast.merger)
            passed = gate is None or gate.get("conclusion") == "success"
            self.say(f"  merged #{pr['number']}" + ("" if passed else
                     " although its gate has not passed (the sandbox's repository does not "
                     f"require {GATE_CHECK})"))
        elif verb == "deploy" and len(args) == 1:
            await self.deploy(args[0])
        elif verb == "wait" and len(args) == 1:
            try:
                delta = parse_duration(args[0])
            except ValueError as exc:
                raise Refused(str(exc)) from None
            fired = await self.sandbox.pass_time(delta)
            self.say(f"  the sandbox clock is at {self.sandbox.clock():%H:%M} UTC; "
                     f"{fired} timer(s) of Conveyor fired")
        else:
            raise Refused(f"cannot do {' '.join([verb, *args])!r}; `help` lists what can be done")

    async def deploy(self, env: str) -> None:
        """Report the default branch's head as deployed to `env`, as the policy expects it:
        a commit status named like a downstream `deployed_context`, else a deployment."""
        em, plan = self.sandbox.emulator, self.plan
        if env not in plan.policy.environments:
            raise Refused(f"no environment {env}; environments are: "
                          f"{', '.join(plan.policy.environments)}")
        downstream = plan.policy.downstream_of(env)
        context = next((fill_context(e.deployed_context, plan.service.name, env)
                        for e in downstream if e.deployed_context), None)
        reporter = next((login for e in downstream for login in e.deployed_by), "argocd[bot]")
        default = em.world.repo_by_name(self.repo).default_branch
        head = em.commit(self.repo, default)["sha"]
        if context is not None:
            await em.set_status(self.repo, head, context, "success", user=reporter,
                                description=f"synced to {head[:7]}")
            self.say(f"  {reporter} posted {context}: success on {default}@{head[:7]}")
        else:
            await em.create_deployment(self.repo, head, env, user=reporter)
            self.say(f"  {reporter} recorded a deployment to {env} of {default}@{head[:7]}")


async def prompt(console: Console, lines: asyncio.StreamReader, stop: asyncio.Event) -> None:
    """Read lines until `quit`, the end of the input, or `stop`."""
    console.say("Type `help` for what can be done here, `quit` to stop.")
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while not stop.is_set():
            reading = asyncio.ensure_future(lines.readline())
            await asyncio.wait([reading, stopping], return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()
                return
            raw = reading.result()
            if not raw or not await console.run(raw.decode("utf-8", "replace")):
                stop.set()
                return
    finally:
        stopping.cancel()
