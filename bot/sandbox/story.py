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
import contextlib
import json
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from conveyor_emulator.images import image_for
from conveyor_emulator.ops import ApiError

from ..domain.deployed import fill_context
from ..domain.policy import Environment, PolicyError
from ..domain.tags import version_from_tag
from ..names import REFUSAL_CHECK
from ..promotion.dashboard import DASHBOARD_LABEL, DEBOUNCE
from ..promotion.marker import branch_prefix, parse_marker
from ..text import short_digest
from .console import Console, prompt
from .demo import digest_of, seed
from .plan import Plan, PlanError, Unplayable, describe_policy, pinned, plan_demo, plan_from_config
from .reading import failed, find_pull, gate_of, gate_state, gate_text, plain, reply_to
from .runner import Sandbox, logs_to_file, start_sandbox
from .stack import SandboxError, image_parts, publish_release

PEOPLE = {"alice": "Alice Dev", "bob": "Bob SRE", "carol": "Carol Reader", "dave": "Dave SRE",
          "erin": "Erin Dev", "frank": "Frank SRE"}


class StoryFailed(Exception):
    """A step did not happen; the message says which and what was seen instead."""


# -- telling -------------------------------------------------------------------------------------
@dataclass
class Narrator:
    out: TextIO
    step_number: int = 0
    problems: list[str] = field(default_factory=list)

    def line(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(self, text: str) -> None:
        self.step_number += 1
        self.line(f"{self.step_number}. {text}")

    def skip(self, text: str, reason: str) -> None:
        self.step_number += 1
        self.line(f"{self.step_number}. (skipped) {text} — {reason}")

    def said(self, text: str) -> None:
        self.line(f"   {text}")

    def problem(self, text: str) -> None:
        """A step that did not happen, though the story can go on."""
        self.problems.append(text)
        self.line(f"   ✗ {text}")


def spoken(value: timedelta) -> str:
    """`timedelta(minutes=90)` → "1 hour 30 minutes"."""
    seconds = int(value.total_seconds())
    parts: list[str] = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts) or "no time"


# -- seeding ---------------------------------------------------------------------------------------
def registry_hosts(plan: Plan) -> set[str]:
    """Every registry the policy's images live on: the emulator serves them all."""
    hosts = set()
    for service in plan.policy.services.values():
        with contextlib.suppress(SandboxError):
            hosts.add(image_parts(service.image)[0])
    return hosts


def reporters(plan: Plan) -> list[str]:
    """Who reports deployments in the story: the policy's `deployed_by`, else Argo CD."""
    return [login for env in plan.chain for login in env.deployed_by] or ["argocd[bot]"]


async def seed_world(sandbox: Sandbox, plan: Plan) -> None:
    emulator = sandbox.emulator
    _registry, image_owner, package = image_parts(plan.service.image)
    if plan.demo:
        seed(emulator, plan.files)
    else:
        deploy_owner = plan.deploy_repo.split("/", 1)[0]
        source_owner = plan.service.source.split("/", 1)[0]
        orgs = {deploy_owner, source_owner, image_owner,
                *(team.split("/", 1)[0] for team in plan.teams)}
        for org in sorted(orgs):
            emulator.add_org(org)
        for login, name in PEOPLE.items():
            emulator.add_user(login, name=name)
        for login in sorted(plan.cast.logins()):
            if emulator.account(login) is None:
                emulator.add_user(login)
        emulator.add_user("github-actions[bot]", type="Bot")
        for login in {"argocd[bot]", *reporters(plan)}:
            if emulator.account(login) is None:
                emulator.add_user(login, type="Bot" if login.endswith("[bot]") else "User")
        for team, members in plan.teams.items():
            org, slug = team.split("/", 1)
            emulator.add_team(org, slug, list(members))
        emulator.add_repo(plan.service.source, files={
            "README.md": f"# {plan.service.source}\n", "Dockerfile": "FROM scratch\n"})
        emulator.add_repo(plan.deploy_repo, files=dict(plan.files))
        writers = ({*PEOPLE, *plan.cast.logins(), *reporters(plan)} - {"carol"})
        for repo in (plan.deploy_repo, plan.service.source):
            for login in sorted(writers):
                emulator.set_permission(repo, login, "write")
            emulator.set_permission(repo, "carol", "read")
        by_owner: dict[str, list[str]] = {}
        for repo in (plan.deploy_repo, plan.service.source):
            by_owner.setdefault(repo.split("/", 1)[0], []).append(repo)
        for owner, repos in by_owner.items():
            emulator.install(owner, repos)
    source = plan.service.source
    # what runs today was released from the source's first commit, long ago: each version the
    # files pin is a published image (and a git tag), so that Conveyor can look it up
    first = emulator.commit(source, emulator.world.repo_by_name(source).default_branch)
    running: dict[str, str] = {}
    if plan.previous is not None:
        running[plan.previous[0]] = plan.previous[1]
    for env in plan.policy.environments:
        found = pinned(plan.files, plan.path(env), plan.service.image,
                       plan.service.tag_key)
        if found is not None:
            tag, digest = found
            running.setdefault(tag, digest or digest_of(f"{plan.service.image}:{tag}"))
    for version, digest in sorted(running.items()):
        if version:
            git_tag = version if version.startswith("v") else f"v{version}"
            await emulator.create_tag(source, git_tag, first["sha"], user="alice")
        if image_for(digest) is not None:
            # a digest pinned in one's own manifests names no content the sandbox has: the
            # registry rightly knows nothing about it
            await emulator.publish_container(image_owner, package, digest,
                                             [version] if version else [], source_repo=source,
                                             revision=first["sha"], emit=False)
    # the change this story releases
    await emulator.push_files(source, {"CHANGELOG.md": f"## {plan.version}\n\n- Faster checkout\n"},
                              message="Faster checkout (#12)", author="alice")
    await sandbox.settle()


# -- reading what the bot did ----------------------------------------------------------------------
def reporting_tool(context: str | None) -> str:
    """Who posts a deployment report of this context: Flux's notification-controller names
    its statuses after the object (`kustomization/<name>/<id>`, `helmrelease/…`)."""
    if context is not None and context.lower().startswith(("kustomization/", "helmrelease/",
                                                           "flux")):
        return "Flux"
    return "Argo CD"


def dashboard_rows(body: str) -> list[str]:
    """The tables of the dashboard issue, aligned for a console."""
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if not table:
            return
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        for row in table:
            out.append("   " + "  ".join(cell.ljust(width) for cell, width in
                                          zip(row, widths, strict=False)).rstrip())
        table.clear()

    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("|"):
            cells = [plain(cell).strip() for cell in line.strip("|").split("|")]
            if all(set(cell) <= {"-", ":", " "} for cell in cells):
                continue
            if table and len(cells) != len(table[0]):
                flush()
            table.append(cells)
        else:
            flush()
            if line.startswith("#"):
                out.append("   " + line.lstrip("#").strip())
    flush()
    return out


def table_from_files(sandbox: Sandbox, plan: Plan) -> list[str]:
    rows = [["service", "environment", "tag", "digest"]]
    for name, service in plan.policy.services.items():
        for env in plan.policy.environments:
            path = plan.policy.path_for(name, env)
            text = sandbox.emulator.file(plan.deploy_repo, path)
            found = pinned({path: text}, path, service.image, service.tag_key) \
                if text is not None else None
            tag, digest = found if found is not None else ("—", None)
            rows.append([name, env, tag if text is not None else "(no file)",
                         short_digest(digest)])
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return ["   " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
            for row in rows]


# -- the story -------------------------------------------------------------------------------------
@dataclass
class Story:
    sandbox: Sandbox
    plan: Plan
    narrator: Narrator
    log_path: Path

    @property
    def repo(self) -> str:
        return self.plan.deploy_repo

    def see_log(self) -> str:
        return f"see {self.log_path}"

    def refusals(self) -> list[str]:
        """What Conveyor reported as refused on the release's source commit."""
        em, source = self.sandbox.emulator, self.plan.service.source
        commit = em.commit(source, em.world.repo_by_name(source).default_branch)["sha"]
        found = []
        for run in em.check_runs(source, commit):
            if str(run["name"]).startswith(REFUSAL_CHECK + " ("):
                summary = str(run["output"].get("summary") or "").split("\n\n", 1)[0]
                found.append(f"{run['name']}: {plain(summary)}")
        return found

    def nothing_opened(self, title: str, reply: str | None = None,
                       env: str | None = None) -> StoryFailed:
        seen = [f"Conveyor replied: {reply}"] if reply else []
        seen += [f"Conveyor refused it ({refusal})" for refusal in self.refusals()]
        if not seen and env is not None:
            seen = [f"Conveyor logged: {why}" for why in logged_reasons(self.log_path, env)[-1:]]
        because = "; ".join(seen) or f"Conveyor said nothing on GitHub; {self.see_log()}"
        return StoryFailed(f'Conveyor opened no "{title}" in {self.repo}: {because}')

    async def release(self) -> dict[str, Any]:
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        say.step(f"CI publishes {plan.service.image}:{plan.version} "
                 f"({short_digest(plan.digest)}) and "
                 f"{plan.cast.requester} publishes release {plan.tag} in {plan.service.source}")
        await publish_release(em, plan.service.image, plan.service.source,
                              plan.version, plan.digest, tag=plan.tag,
                              author=plan.cast.requester, provenance=True)
        await self.sandbox.settle()
        title = f"Promote {plan.service.name} {plan.version} to {plan.entry.name}"
        pr = find_pull(self.sandbox, self.repo, title)
        if pr is None:
            raise self.nothing_opened(title, env=plan.entry.name)
        for refusal in self.refusals():  # another entry environment may have refused it
            say.problem(f"Conveyor refused a promotion: {refusal}")
        if pr["merged"]:
            done = "merged it (auto_merge)" if plan.entry.auto_merge else "it is merged"
            say.said(f'Conveyor opened #{pr["number"]} "{title}" and {done}')
            return pr
        if plan.entry.auto_merge:
            say.said(f'Conveyor opened #{pr["number"]} "{title}"')
            say.problem(f"#{pr['number']} was not merged although {plan.entry.name} has "
                        f"auto_merge; {gate_text(gate_of(self.sandbox, self.repo, pr))}")
        else:
            say.said(f'Conveyor opened #{pr["number"]} "{title}" (no auto_merge in '
                     f"{plan.entry.name})")
        say.step(f"{plan.cast.merger} merges #{pr['number']}")
        await em.merge_pull(self.repo, pr["number"], user=plan.cast.merger,
                            method=plan.entry.merge_method)
        await self.sandbox.settle()
        return pr

    async def promote(self, upstream_pr: dict[str, Any], gated: Environment) -> dict[str, Any]:
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        title = f"Promote {plan.service.name} {plan.version} to {gated.name}"
        reply: str | None = None
        if gated.promote == "auto":
            say.step(f"#{upstream_pr['number']} is merged; {gated.name} has `promote: auto`")
        else:
            command = f"/promote {gated.name}"
            say.step(f'{plan.cast.requester} comments "{command}" on #{upstream_pr["number"]}')
            posted = await em.comment(self.repo, upstream_pr["number"], plan.cast.requester,
                                      command)
            await self.sandbox.settle()
            reply = reply_to(self.sandbox, self.repo, upstream_pr["number"], posted["id"])
        pr = find_pull(self.sandbox, self.repo, title)
        if pr is None:
            raise self.nothing_opened(title, reply, gated.name)
        done = " and merged it (auto_merge)" if pr["merged"] else ""
        say.said(f'Conveyor opened #{pr["number"]} "{title}"{done}; '
                 f"{gate_text(gate_of(self.sandbox, self.repo, pr))}")
        if reply is not None and failed(reply):
            say.problem(f"Conveyor replied: {reply}")
        return pr

    async def deployed(self, pr: dict[str, Any], gated: Environment) -> None:
        em, say = self.sandbox.emulator, self.narrator
        upstream = gated.after or ""
        context = fill_context(gated.deployed_context, self.plan.service.name, upstream) \
            if gated.deployed_context else None
        tool = reporting_tool(context)
        if "deployed" not in gated.evidence:
            say.skip(f"{tool} reports {upstream} synced",
                     f"{gated.name} asks for no `deployed` evidence")
            return
        if self.merged(pr):
            say.skip(f"{tool} reports {upstream} synced", f"#{pr['number']} is merged already")
            return
        default = em.world.repo_by_name(self.repo).default_branch
        head = em.commit(self.repo, default)["sha"]
        reporter = gated.deployed_by[0] if gated.deployed_by else "argocd[bot]"
        if context is not None:
            say.step(f"{tool} reports {context} success on {default}@{head[:7]}")
            await em.set_status(self.repo, head, context, "success", user=reporter,
                                description=f"synced to {head[:7]}")
        else:
            say.step(f"{tool} records a successful deployment to {upstream} of "
                     f"{default}@{head[:7]}")
            await em.create_deployment(self.repo, head, upstream, user=reporter)
        await self.sandbox.settle()
        run = gate_of(self.sandbox, self.repo, pr)
        say.said(gate_text(run))
        if run is not None and "deployed" in str(run["output"].get("title") or "") \
                and gate_state(run) == "failure":
            say.problem(f"the deployment of {upstream} did not count as evidence")

    async def soak(self, pr: dict[str, Any], gated: Environment) -> None:
        say = self.narrator
        if not gated.soak:
            say.skip("time passes", f"{gated.name} has no soak")
            return
        if self.merged(pr):
            say.skip(f"{spoken(gated.soak)} of soak", f"#{pr['number']} is merged already")
            return
        delta = gated.soak + timedelta(seconds=1)
        before = self.sandbox.clock()
        fired = await self.sandbox.pass_time(delta)
        after = self.sandbox.clock()
        verb = "passes" if spoken(gated.soak).startswith("1 ") and " " not in \
            spoken(gated.soak)[2:] else "pass"
        say.step(f"{spoken(gated.soak)} {verb} (the sandbox clock moves from "
                 f"{before:%H:%M} to {after:%H:%M} UTC; {fired} timer(s) of Conveyor fire)")
        run = gate_of(self.sandbox, self.repo, pr)
        say.said(gate_text(run))
        if run is not None and "soak" in str(run["output"].get("title") or "").lower():
            say.problem("the gate still waits for the soak")

    async def approve(self, pr: dict[str, Any], gated: Environment) -> None:
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        if not gated.approvals:
            say.skip("an approver reviews", f"{gated.name} needs no approvals")
            return
        if self.merged(pr):
            say.skip("an approver reviews", f"#{pr['number']} is merged already")
            return
        people = plan.cast.approvers.get(gated.name, ())[:gated.approvals]
        if len(people) < gated.approvals:
            raise StoryFailed(f"{gated.name} needs {gated.approvals} approval(s) but the "
                              f"sandbox has only {len(people)} approver(s) who may give one")
        for login, why in people:
            label = why if why.startswith("@") else "approver"
            say.step(f"{login} ({label}) approves #{pr['number']}")
            await em.review(self.repo, pr["number"], login, "APPROVE", body="Ship it")
            await self.sandbox.settle()
            say.said(gate_text(gate_of(self.sandbox, self.repo, pr)))

    def merged(self, pr: dict[str, Any]) -> bool:
        return bool(next(p for p in self.sandbox.emulator.pulls(self.repo, state="all")
                         if p["number"] == pr["number"])["merged"])

    async def wait_out(self, pr: dict[str, Any]) -> None:
        """While the gate is `in_progress` (a freeze window, a soak), move the clock to when
        Conveyor's timer for this PR says it passes."""
        for _ in range(3):
            run = gate_of(self.sandbox, self.repo, pr)
            if gate_state(run) != "in_progress" or self.merged(pr):
                return
            due = [when for key, when in self.sandbox.runtime.ctx.scheduler.pending().items()
                   if key.endswith(f"#{pr['number']}")]
            if not due:
                return
            title = str(run["output"].get("title") or "the gate waits") if run else ""
            before = self.sandbox.clock()
            await self.sandbox.pass_time(max(min(due) - before, timedelta(0))
                                         + timedelta(seconds=1))
            self.narrator.step(f"{title[:1].lower() + title[1:]}: time passes (the sandbox "
                               f"clock moves from {before:%H:%M} to "
                               f"{self.sandbox.clock():%H:%M} UTC)")
            self.narrator.said(gate_text(gate_of(self.sandbox, self.repo, pr)))

    async def merge(self, pr: dict[str, Any], gated: Environment) -> None:
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        await self.wait_out(pr)
        run = gate_of(self.sandbox, self.repo, pr)
        state = next(p for p in em.pulls(self.repo, state="all") if p["number"] == pr["number"])
        if state["merged"]:
            say.step(f"Conveyor merges #{pr['number']} itself ({gated.name} has auto_merge)")
        elif gate_state(run) != "success":
            raise StoryFailed(f"#{pr['number']} cannot be merged: {gate_text(run)}")
        else:
            say.step(f"{plan.cast.merger} merges #{pr['number']}")
            await em.merge_pull(self.repo, pr["number"], user=plan.cast.merger,
                                method=gated.merge_method)
            await self.sandbox.settle()
        source = plan.service.source
        recorded = [d for d in em.deployments(source) if d["environment"] == gated.name]
        if recorded:
            statuses = recorded[-1].get("statuses") or []
            latest = statuses[-1]["state"] if statuses else "no status"
            say.said(f"source deployment recorded in {source} ({gated.name}): commit "
                     f"{str(recorded[-1]['sha'])[:7]}, {latest}")
        else:
            say.problem(f"no deployment to {gated.name} was recorded in {source}")

    async def rollback(self, pr: dict[str, Any], gated: Environment) -> None:
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        command = f"/rollback {plan.service.name} {gated.name}"
        if plan.previous is None:
            say.skip(f'{plan.cast.merger} comments "{command}"',
                     f"{plan.policy.path_for(plan.service.name, gated.name)} pinned no "
                     "digest before this story, so there is nothing to roll back to")
            return
        say.step(f'{plan.cast.merger} comments "{command}" on #{pr["number"]}')
        posted = await em.comment(self.repo, pr["number"], plan.cast.merger, command)
        await self.sandbox.settle()
        prefix = branch_prefix(gated.name, plan.service.name, rollback=True)
        opened = [p for p in em.pulls(self.repo, state="open")
                  if str(p["head"]["ref"]).startswith(prefix)]
        reply = reply_to(self.sandbox, self.repo, pr["number"], posted["id"])
        if not opened:
            seen = f"Conveyor replied: {reply}" if reply else "Conveyor did not reply"
            say.problem(f"no rollback PR was opened; {seen}")
            return
        back = opened[-1]
        if reply is not None and failed(reply):
            say.problem(f"Conveyor replied: {reply}")
        version, digest = plan.previous
        say.said(f'Conveyor opened #{back["number"]} "{back["title"]}" '
                 f"({version or 'the untagged image'} is {short_digest(digest)}); "
                 f"{gate_text(gate_of(self.sandbox, self.repo, back))}")

    async def train(self, pr: dict[str, Any]) -> None:
        """The demo's release train: the other services of the story's group get the story's
        version into the entry environment, then one `/promote <env> <group>` moves the group
        (the story's service is there already, so the train leaves it out and names it)."""
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        group = next((g for g in plan.policy.groups.values() if plan.service.name in g.services),
                     None)
        others = [name for name in group.services if name != plan.service.name] if group else []
        if not plan.demo or group is None or not others or not plan.chain:
            return
        gated = plan.chain[0]
        images = [plan.policy.services[name].image for name in others]
        say.step(f"CI publishes {', '.join(f'{image}:{plan.version}' for image in images)} "
                 f"(group {group.name}: {', '.join(group.services)})")
        for name, image in zip(others, images, strict=True):
            _registry, owner, package = image_parts(image)
            await em.publish_container(owner, package, digest_of(f"{image}:{plan.version}"),
                                       [plan.version],
                                       source_repo=plan.policy.services[name].source)
        await self.sandbox.settle()
        entered = [p for name in others if (p := find_pull(
            self.sandbox, self.repo, f"Promote {name} {plan.version} to {plan.entry.name}"))]
        say.said("Conveyor opened " + ", ".join(
            f"#{p['number']}{' and merged it' if p['merged'] else ''}" for p in entered)
            + f" into {plan.entry.name}")
        command = f"/promote {gated.name} {group.name}"
        say.step(f'{plan.cast.requester} comments "{command}" on #{pr["number"]}')
        posted = await em.comment(self.repo, pr["number"], plan.cast.requester, command)
        await self.sandbox.settle()
        reply = reply_to(self.sandbox, self.repo, pr["number"], posted["id"]) or ""
        prefix = f"Promote {group.name} to {gated.name} ("
        trains = [p for p in em.pulls(self.repo, state="open") if p["title"].startswith(prefix)]
        if not trains:
            say.problem(f"no release train was opened; Conveyor replied: {plain(reply)}")
            return
        train = trains[-1]
        marker = parse_marker(train.get("body"))
        moved = {member.service for member in marker.members} if marker else set()
        left = [name for name in group.services if name not in moved]
        say.said(f'Conveyor opened #{train["number"]} "{train["title"]}"'
                 + (f" (left out, already in {gated.name}: {', '.join(left)})" if left else "")
                 + f"; {gate_text(gate_of(self.sandbox, self.repo, train))}")

    def last_promoted(self, env: Environment) -> str | None:
        """The service of the newest promotion merged into ``env`` (read off its title)."""
        merged = sorted((p for p in self.sandbox.emulator.pulls(self.repo, state="all")
                         if p["merged"] and p["title"].startswith("Promote ")
                         and p["title"].endswith(f" to {env.name}")),
                        key=lambda p: str(p["merged_at"]))
        for pr in reversed(merged):
            name = str(pr["title"]).split(" ")[1]
            if name in self.plan.policy.services:
                return name
        return None

    async def failure(self) -> None:
        """A deployment fails in the first environment with `on_failure`: Conveyor marks the
        digest and (with `rollback`) opens the rollback itself."""
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        env = next((e for e in [plan.entry, *plan.chain] if e.on_failure), None)
        if env is None:
            say.skip("a deployment fails", "no environment has on_failure")
            return
        service = self.last_promoted(env) or plan.service.name
        default = em.world.repo_by_name(self.repo).default_branch
        head = em.commit(self.repo, default)["sha"]
        reporter = env.deployed_by[0] if env.deployed_by else "argocd[bot]"
        before = {p["number"] for p in em.pulls(self.repo, state="all")}
        if env.deployed_context is not None:
            context = fill_context(env.deployed_context, service, env.name)
            say.step(f"{reporting_tool(context)} reports {context} failure on "
                     f"{default}@{head[:7]}")
            await em.set_status(self.repo, head, context, "failure", user=reporter,
                                description="health check failed")
        else:
            say.step(f"a deployment to {env.name} of {default}@{head[:7]} fails")
            await em.create_deployment(self.repo, head, env.name, state="failure",
                                       user=reporter)
        await self.sandbox.settle()
        opened = [p for p in em.pulls(self.repo, state="all")
                  if p["number"] not in before and p["title"].startswith("Roll back ")]
        for back in opened:
            done = " and merged it (auto_merge)" if back["merged"] else ""
            say.said(f'Conveyor opened #{back["number"]} "{back["title"]}"{done}')
        for pr in em.pulls(self.repo, state="closed"):
            for comment in em.comments(self.repo, pr["number"]):
                body = str(comment.get("body") or "")
                if "conveyor:watch-comment" in body and "No rollback is opened" in body:
                    why = body.split("No rollback is opened", 1)[1].split(")", 1)[0]
                    say.said(f"Conveyor commented on #{pr['number']}: no rollback is "
                             f"opened{plain(why)})")
        blocked = [p for p in em.pulls(self.repo, state="open")
                   if "reported failing" in str((gate_of(self.sandbox, self.repo, p) or {})
                                                .get("output", {}).get("summary") or "")]
        for pr in blocked:
            say.said(f"#{pr['number']}: {gate_text(gate_of(self.sandbox, self.repo, pr))}")
        if not opened and not blocked:
            say.said(f"Conveyor acted on nothing (a report counts within {spoken(env.watch)} "
                     f"of the merge; {self.see_log()})")

    async def dashboard(self) -> None:
        say, em = self.narrator, self.sandbox.emulator
        await self.sandbox.pass_time(DEBOUNCE + timedelta(seconds=1))
        issues = em.issues(self.repo, labels=[DASHBOARD_LABEL])
        say.line()
        if issues:
            issue = issues[-1]
            say.line(f'Dashboard: issue #{issue["number"]} "{issue["title"]}" labelled '
                     f"{DASHBOARD_LABEL} in {self.repo}")
            for row in dashboard_rows(str(issue.get("body") or "")):
                say.line(row)
        else:
            say.line(f"No issue labelled {DASHBOARD_LABEL} in {self.repo}; "
                     "what the files of the default branch pin:")
            for row in table_from_files(self.sandbox, self.plan):
                say.line(row)

    async def play(self) -> None:
        plan, say = self.plan, self.narrator
        pr = await self.release()
        if not plan.chain:
            say.said(f"the policy has no gated environment after {plan.entry.name}: "
                     "the story ends here")
        for gated in plan.chain:
            pr = await self.promote(pr, gated)
            await self.deployed(pr, gated)
            await self.soak(pr, gated)
            await self.approve(pr, gated)
            await self.merge(pr, gated)
        if plan.chain:
            await self.rollback(pr, plan.chain[-1])
            await self.train(pr)
        await self.failure()
        await self.dashboard()


def logged_errors(path: Path) -> list[str]:
    """The messages of the records at level error or above in the bot's JSON log."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("level") in ("error", "critical"):
            found.append(f"{record.get('logger')}: {record.get('message')}")
    return found


def logged_reasons(path: Path, env: str) -> list[str]:
    """Why Conveyor skipped or refused a promotion into `env`, from its JSON log (a downstream
    promotion that is not opened is reported nowhere on GitHub)."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict) or record.get("env") != env:
            continue
        message = str(record.get("message") or "")
        if "skipped" in message or "refused" in message:
            found.append(str(record.get("detail") or message))
    return found


# -- the `--keep` example: a later release, for `python -m bot receive` ----------------------------
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
                                       digest_of(f"{plan.service.image}:{version}"), [version],
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


# -- entry point -----------------------------------------------------------------------------------
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
        for env in (plan.entry, *plan.chain):
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
