"""The story's acts: each does what a person or CI would on GitHub, then tells what the bot
did in answer, read from the emulator."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.domain.deployed import fill_context
from bot.domain.policy import Environment
from bot.domain.promotions.marker import branch_prefix, parse_marker
from bot.names import REFUSAL_CHECK
from bot.promotion.dashboard.issue import DASHBOARD_LABEL
from bot.sandbox.botlog import logged_reasons
from bot.sandbox.demo import artifact_digest, digest_of
from bot.sandbox.failure_act import fail_a_deployment
from bot.sandbox.plan import Plan
from bot.sandbox.reading import (
    attestation_of,
    failed,
    find_pull,
    gate_of,
    gate_state,
    gate_text,
    plain,
    reply_to,
)
from bot.sandbox.runner import Sandbox
from bot.sandbox.stack import image_parts, publish_release
from bot.sandbox.telling import Narrator, dashboard_rows, reporting_tool, spoken, table_from_files
from bot.text import short_digest


class StoryFailed(Exception):
    """A step did not happen; the message says which and what was seen instead."""


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

    async def release(self) -> dict[str, dict[str, Any]]:
        """The release, and its promotion PR into every entry environment on the way, merged;
        by environment."""
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        say.step(f"CI publishes {plan.service.image}:{plan.version} "
                 f"({short_digest(plan.digest)}) and "
                 f"{plan.cast.requester} publishes release {plan.tag} in {plan.service.source}")
        await publish_release(em, plan.service.image, plan.service.source,
                              plan.version, plan.digest, tag=plan.tag,
                              author=plan.cast.requester, provenance=True)
        await self.sandbox.settle()
        for refusal in self.refusals():  # another entry environment may have refused it
            say.problem(f"Conveyor refused a promotion: {refusal}")
        return {entry.name: await self.entry_merged(entry)
                for entry in plan.entries or (plan.entry,)}

    async def entry_merged(self, entry: Environment) -> dict[str, Any]:
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        title = f"Promote {plan.service.name} {plan.version} to {entry.name}"
        pr = find_pull(self.sandbox, self.repo, title)
        if pr is None:
            raise self.nothing_opened(title, env=entry.name)
        attestation = attestation_of(pr)
        if pr["merged"]:
            done = "merged it (auto_merge)" if entry.auto_merge else "it is merged"
            say.said(f'Conveyor opened #{pr["number"]} "{title}" and {done}')
            if attestation:
                say.said(f"its provenance: attestation {attestation}")
            return pr
        if entry.auto_merge:
            say.said(f'Conveyor opened #{pr["number"]} "{title}"')
            say.problem(f"#{pr['number']} was not merged although {entry.name} has "
                        f"auto_merge; {gate_text(gate_of(self.sandbox, self.repo, pr))}")
        else:
            say.said(f'Conveyor opened #{pr["number"]} "{title}" (no auto_merge in '
                     f"{entry.name})")
        say.step(f"{plan.cast.merger} merges #{pr['number']}")
        await em.merge_pull(self.repo, pr["number"], user=plan.cast.merger,
                            method=entry.merge_method)
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
        for upstream in gated.after:
            await self.deployed_in(pr, gated, upstream)

    async def deployed_in(self, pr: dict[str, Any], gated: Environment, upstream: str) -> None:
        em, say = self.sandbox.emulator, self.narrator
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
                and gate_state(run) == "failure" and upstream == gated.after[-1]:
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
            due = [when for key, when in self.sandbox.conveyor.ctx.scheduler.pending().items()
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
        for unmerged in (p for p in entered if not p["merged"]):  # its gate says why
            say.said(f"#{unmerged['number']} left open: "
                     f"{gate_text(gate_of(self.sandbox, self.repo, unmerged))}")
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

    async def dashboard(self) -> None:
        say, em = self.narrator, self.sandbox.emulator
        # the refresh after a merge waits for the delivery figures: each timer as it comes due
        for _ in range(4):
            due = [when for key, when in self.sandbox.conveyor.ctx.scheduler.pending().items()
                   if key.startswith(("dashboard:", "delivery:"))]
            if not due:
                break
            await self.sandbox.pass_time(max(min(due) - self.sandbox.clock(), timedelta(0))
                                         + timedelta(seconds=1))
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
        merged = await self.release()
        pr = next(iter(merged.values()))
        if not plan.chain:
            say.said(f"the policy has no gated environment after {plan.entry.name}: "
                     "the story ends here")
        for gated in plan.chain:
            # a fan-in follows the last of its upstreams to get the digest
            pr = await self.promote(merged[gated.after[-1]], gated)
            await self.deployed(pr, gated)
            await self.soak(pr, gated)
            await self.approve(pr, gated)
            await self.merge(pr, gated)
            merged[gated.name] = pr
        if plan.chain:
            await self.rollback(pr, plan.chain[-1])
            await self.train(pr)
        await fail_a_deployment(self.sandbox, plan, say, self.repo, self.see_log())
        await self.chart()
        await self.dashboard()

    async def chart(self) -> None:
        """The demo's other way to ship web: CI pushes its Helm chart after the release; the
        chart's `registry_package` event completes the release's promotion of `web-chart`."""
        plan, em, say = self.plan, self.sandbox.emulator, self.narrator
        chart = plan.policy.services.get("web-chart")
        if not plan.demo or chart is None:
            return
        digest = artifact_digest(chart, plan.version)
        _registry, owner, package = image_parts(chart.image)
        say.step(f"CI pushes the Helm chart {chart.image}:{plan.version} "
                 f"({short_digest(digest)}) of release {plan.tag}")
        await em.publish_container(owner, package, digest, [plan.version],
                                   source_repo=chart.source)
        await self.sandbox.settle()
        title = f"Promote {chart.name} {plan.version} to {plan.entry.name}"
        pr = find_pull(self.sandbox, self.repo, title)
        if pr is None:
            raise self.nothing_opened(title, env=plan.entry.name)
        done = " and merged it (auto_merge)" if pr["merged"] else ""
        path = plan.policy.path_for(chart.name, plan.entry.name)
        say.said(f'Conveyor opened #{pr["number"]} "{title}"{done}: {path} pins the chart '
                 "by version and digest")
