"""The story's failure act: a deployment fails in the first environment that watches its
reports (`on_failure`), and the story tells what Conveyor did about it."""

from __future__ import annotations

from bot.domain.deployed import fill_context
from bot.domain.policy import Environment
from bot.sandbox.plan import Plan
from bot.sandbox.reading import gate_of, gate_text, plain
from bot.sandbox.runner import Sandbox
from bot.sandbox.telling import Narrator, reporting_tool, spoken


def last_promoted(sandbox: Sandbox, plan: Plan, full_name: str, env: Environment) -> str | None:
    """The service of the newest promotion merged into ``env`` (read off its title)."""
    merged = sorted((p for p in sandbox.emulator.pulls(full_name, state="all")
                     if p["merged"] and p["title"].startswith("Promote ")
                     and p["title"].endswith(f" to {env.name}")),
                    key=lambda p: str(p["merged_at"]))
    for pr in reversed(merged):
        name = str(pr["title"]).split(" ")[1]
        if name in plan.policy.services:
            return name
    return None


async def fail_a_deployment(sandbox: Sandbox, plan: Plan, say: Narrator, full_name: str,
                            see_log: str) -> None:
    """A deployment fails in the first environment with `on_failure`: Conveyor marks the
    digest and (with `rollback`) opens the rollback itself."""
    em = sandbox.emulator
    env = next((e for e in (*plan.entries, *plan.chain) if e.on_failure), None)
    if env is None:
        say.skip("a deployment fails", "no environment has on_failure")
        return
    service = last_promoted(sandbox, plan, full_name, env) or plan.service.name
    default = em.world.repo_by_name(full_name).default_branch
    head = em.commit(full_name, default)["sha"]
    reporter = env.deployed_by[0] if env.deployed_by else "argocd[bot]"
    before = {p["number"] for p in em.pulls(full_name, state="all")}
    if env.deployed_context is not None:
        context = fill_context(env.deployed_context, service, env.name)
        say.step(f"{reporting_tool(context)} reports {context} failure on "
                 f"{default}@{head[:7]}")
        await em.set_status(full_name, head, context, "failure", user=reporter,
                            description="health check failed")
    else:
        say.step(f"a deployment to {env.name} of {default}@{head[:7]} fails")
        await em.create_deployment(full_name, head, env.name, state="failure",
                                   user=reporter)
    await sandbox.settle()
    opened = [p for p in em.pulls(full_name, state="all")
              if p["number"] not in before and p["title"].startswith("Roll back ")]
    for back in opened:
        done = " and merged it (auto_merge)" if back["merged"] else ""
        say.said(f'Conveyor opened #{back["number"]} "{back["title"]}"{done}')
    for pr in em.pulls(full_name, state="closed"):
        for comment in em.comments(full_name, pr["number"]):
            body = str(comment.get("body") or "")
            if "conveyor:watch-comment" in body and "No rollback is opened" in body:
                why = body.split("No rollback is opened", 1)[1].split(")", 1)[0]
                say.said(f"Conveyor commented on #{pr['number']}: no rollback is "
                         f"opened{plain(why)})")
    blocked = [p for p in em.pulls(full_name, state="open")
               if "reported failing" in str((gate_of(sandbox, full_name, p) or {})
                                            .get("output", {}).get("summary") or "")]
    for pr in blocked:
        say.said(f"#{pr['number']}: {gate_text(gate_of(sandbox, full_name, pr))}")
    if not opened and not blocked:
        say.said(f"Conveyor acted on nothing (a report counts within {spoken(env.watch)} "
                 f"of the merge; {see_log})")
