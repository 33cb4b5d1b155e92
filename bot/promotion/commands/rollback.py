"""`/rollback`: back to the digest or the group's combination that ran before, asked by a
person or by Conveyor itself when a watched deployment fails."""

from __future__ import annotations

from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.commands.parse import Rollback, RollbackTrain
from bot.domain.promotions.candidate import release_tag_variants
from bot.domain.trains import Period, previous_combination
from bot.promotion.commands.command_run import CommandCapabilities, CommandRun, Invocation
from bot.promotion.commands.replies import Reply, describe_result, describe_train
from bot.promotion.opening.opener import OpenResult
from bot.promotion.opening.provenance import gather_provenance
from bot.promotion.policies import DeploymentRepo
from bot.promotion.watching.rollback import (
    choose_rollback,
    live_periods,
    read_history,
    rollback_note,
)
from bot.promotion.watching.watch import Watcher


async def rollback(run: CommandRun, command: Rollback) -> str:
    return (await open_rollback(run, command))[1]


async def open_rollback(run: CommandRun, command: Rollback) -> tuple[OpenResult | None, str]:
    """The rollback PR (None when refused) and the reply's text."""
    repo = run.where.repo
    policy = run.where.policy
    history, truncated = await read_history(run.gh, run.repo, repo.default_branch, policy,
                                            command.service, command.environment,
                                            run.ctx.bot_login)
    wanted_digest = None
    if command.ref is not None and not command.is_digest:
        image = policy.services[command.service].image
        variants = list(dict.fromkeys([command.ref, *release_tag_variants(command.ref)]))
        found = await run.ctx.images.find_by_tags(image, variants)
        wanted_digest = found.digest if found else None
    choice = choose_rollback(live_periods(history, truncated=truncated), command.environment,
                             command.service, command.ref, wanted_digest)
    if choice.period is None or choice.period.digest is None:
        return None, f"❌ {choice.refusal}"
    period = choice.period
    digest = period.digest
    assert digest is not None
    candidate = await run.candidate(command.service, digest, period.tag, "rollback")
    provenance = await gather_provenance(run.gh, run.ctx, candidate, run.signer(candidate))
    result = await run.opener().open(
        candidate, command.environment, provenance=provenance,
        explicit=True, rollback_note=rollback_note(period, command.environment))
    return result, describe_result(result, command.service, candidate.version,
                                   command.environment, rollback=True)


async def rollback_train(run: CommandRun, command: RollbackTrain) -> str:
    repo = run.where.repo
    policy = run.where.policy
    services = policy.groups[command.group].services
    histories: dict[str, list[Period]] = {}
    links: dict[str, str] = {}
    for service in services:
        history, truncated = await read_history(run.gh, run.repo, repo.default_branch,
                                                policy, service, command.environment,
                                                run.ctx.bot_login)
        links.update((pin.sha, pin.url) for pin in history)
        histories[service] = [
            Period(p.digest, p.tag, p.start.sha, p.start.at.timestamp())
            for p in live_periods(history, truncated=truncated)]
    recent = await run.gh.getitem(
        f"/repos/{run.repo}/commits?sha={quote(repo.default_branch)}&per_page=100")
    choice = previous_combination(histories, command.environment,
                                  [str(commit["sha"]) for commit in recent])
    if choice.refusal is not None or choice.change_sha is None:
        return f"❌ {choice.refusal}"
    candidates = []
    for service, period in choice.moves.items():
        assert period.digest is not None
        candidates.append(await run.candidate(service, period.digest, period.tag,
                                                "rollback"))
    sha = choice.change_sha
    url = links.get(sha) or f"{run.ctx.web_url}/{run.repo}/commit/{sha}"
    note = (f"**Rollback.** Goes back to the combination that ran in {command.environment} "
            f"before [`{sha[:7]}`]({url}), the group's most recent change there: each digest "
            f"ran in {command.environment} before, and that history is its evidence; the "
            f"approvals of {command.environment} still apply.")
    result = await run.train_opener().open(
        command.group, command.environment, candidates, requester=run.where.commenter,
        rollback_note=note)
    text = describe_train(result, command.group, command.environment, rollback=True)
    if choice.unchanged and result.action == "opened":
        text += (f" Not changed by `{sha[:7]}`, so left as they are: "
                 f"{', '.join(choice.unchanged)}.")
    return text


async def open_rollback_for(capabilities: CommandCapabilities, gh: GitHubAPI,
                            repo: DeploymentRepo, service: str, environment: str, number: int
                            ) -> tuple[OpenResult | None, str]:
    """What `/rollback <service> <environment>` on PR ``number`` does, asked by Conveyor
    itself (an automatic rollback): the PR, or None and why not."""
    where = Invocation(repo, number, True, capabilities.ctx.bot_login, 0)
    command = Rollback(name="rollback", args=(service, environment), line=1,
                       raw=f"/rollback {service} {environment}", service=service,
                       environment=environment, ref=None)
    return await open_rollback(CommandRun(capabilities, gh, where, Reply(0)), command)


def watcher(capabilities: CommandCapabilities, gh: GitHubAPI, repo: DeploymentRepo
            ) -> Watcher:
    """The watch of one repository, rolling back through `/rollback` as Conveyor itself."""

    async def roll_back(service: str, environment: str, number: int
                        ) -> tuple[OpenResult | None, str]:
        return await open_rollback_for(capabilities, gh, repo, service, environment,
                                       number)

    return Watcher(capabilities.ctx, gh, repo, roll_back)
