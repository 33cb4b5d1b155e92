"""`/promote`: carry a promotion PR's digest on, promote a named image, open a release
train."""

from __future__ import annotations

from bot.domain.commands.parse import Promote, PromoteExplicit, PromoteTrain
from bot.domain.promotions.candidate import Candidate, release_tag_variants
from bot.domain.promotions.marker import PromotionMarker
from bot.domain.trains import ALL_GROUP
from bot.promotion.authorship.trust import trusted_promotion
from bot.promotion.commands.command_run import CommandRun
from bot.promotion.commands.replies import describe_result, describe_train
from bot.promotion.opening.provenance import gather_provenance
from bot.promotion.opening.upstream_pins import agreed_pins
from bot.promotion.trains.flows import promote_group
from bot.promotion.triggers.downstream import promote_downstream
from bot.registry.lookup import kind_problem
from bot.text import short_digest


async def promote_same_digest(run: CommandRun, command: Promote) -> str:
    if not run.where.is_pull:
        services = list(run.where.policy.services)
        if len(services) == 1:
            return await promote_from_upstreams(run, command.environment, services[0])
        return (f"❌ on an issue, `/promote {command.environment}` needs the service: "
                f"`/promote {command.environment} <service>` promotes what every environment "
                f"before {command.environment} runs, `/promote <service> <tag-or-digest> "
                f"{command.environment}` a version you name.")
    pr = await run.pull()
    target = command.environment
    trusted = await trusted_promotion(run.gh, run.repo, pr, run.ctx.bot_login)
    if trusted is None:
        # A marker proves nothing: anyone can paste one into a pull request they opened.
        return (f"❌ #{run.where.number} is not a promotion PR Conveyor opened, so there is "
                "no digest to carry on. Name the image instead: "
                "`/promote <service> <tag-or-digest> <env>`.")
    group = trusted[1].train
    if group is not None:
        return (f"ℹ️ #{run.where.number} is a release train of {group}: "
                f"`/promote {target} {group if group != ALL_GROUP else '--all'}`"
                f" opens its train at the digests that hold evidence upstream of {target} "
                "now.")
    marker = trusted[0]
    if pr.get("state") != "open" and not pr.get("merged"):
        return (f"❌ #{run.where.number} was closed without merging; promote from an open "
                "or merged promotion PR, or name the image with "
                "`/promote <service> <tag-or-digest> <env>`.")
    reachable = list(run.where.policy.descendants(marker.environment))
    if target not in reachable:
        return "❌ " + unreachable(marker, target, reachable)
    results = await promote_downstream(
        run.capabilities.promoter, run.gh, run.where.repo, marker, run.where.number,
        environments=[target], requester=run.where.commenter,
    )
    if not results:
        return f"❌ the service {marker.service} is no longer in the policy."
    _, result = results[0]
    return describe_result(result, marker.service, marker.version, target)


async def promote_from_upstreams(run: CommandRun, environment: str, service: str) -> str:
    """What every upstream environment of ``environment`` runs, promoted there; refused when
    they disagree (each named with what it runs) or one runs nothing pinned."""
    env = run.where.policy.environments[environment]
    if not env.gated:
        return (f"❌ {environment} is an entry environment: nothing comes before it to take "
                f"the digest from; name the version: `/promote {service} <tag-or-digest> "
                f"{environment}`.")
    pin = (await agreed_pins(run.gh, run.where.repo, [service], environment,
                             run.ctx.images))[service]
    if isinstance(pin, str):
        return (f"❌ {service} cannot be promoted to {environment} from {env.upstreams}: {pin}. "
                f"Name the version: `/promote {service} <tag-or-digest> {environment}`.")
    tag, digest = pin
    candidate = await run.candidate(service, digest, tag, "command")
    provenance = await gather_provenance(run.gh, run.ctx, candidate, run.signer(candidate))
    result = await run.opener().open(
        candidate, environment, provenance=provenance, explicit=True)
    return describe_result(result, service, candidate.version, environment)


async def promote_explicit(run: CommandRun, command: PromoteExplicit) -> str:
    policy = run.where.policy
    image = policy.services[command.service].image
    if command.is_digest:
        digest = command.ref
        found = await run.ctx.images.find_by_digest(image, digest)
        problem = kind_problem(f"{image}@{short_digest(digest)}", found, chart=policy.services[
            command.service].is_chart) if found is not None else None
        if problem is not None:
            return f"❌ {problem}."
        known = await run.marker_for(command.service, digest)
        if found is None and known is None:
            return (f"❌ no published version of `{image}` has the digest "
                    f"`{short_digest(digest)}`; check the digest, or promote by tag.")
        if found is not None and not found.manifest.is_index:
            index = await run.ctx.images.index_of(image, digest)
            if index is not None:
                return (f"❌ `{short_digest(digest)}` is one platform of the multi-arch image "
                        f"`{image}:{index.tag}`; promote its index digest `{index.digest}` "
                        f"(or the tag `{index.tag}`) so every platform gets the same "
                        "image.")
        tag = (known.tag if known else None) or await run.ctx.images.tag_of(image, digest)
        if tag is None:
            return (f"❌ `{image}@{short_digest(digest)}` carries no tag; Conveyor writes a "
                    "tag beside the digest, so promote a tagged image.")
    else:
        variants = list(dict.fromkeys([command.ref, *release_tag_variants(command.ref)]))
        by_tag = await run.ctx.images.find_by_tags(image, variants)
        if by_tag is None:
            looked = ", ".join(f"`{v}`" for v in variants)
            return f"❌ `{image}` has no published image tagged {looked}."
        tag, digest = by_tag.tag, by_tag.digest
        problem = kind_problem(f"{image}:{tag}", by_tag, chart=policy.services[command.service]
                               .is_chart)
        if problem is not None:
            return f"❌ {problem}."
    candidate = await run.candidate(command.service, digest, tag, "command")
    provenance = await gather_provenance(run.gh, run.ctx, candidate, run.signer(candidate))
    result = await run.opener().open(
        candidate, command.environment, provenance=provenance, explicit=True)
    return describe_result(result, command.service, candidate.version, command.environment)


async def promote_train(run: CommandRun, command: PromoteTrain) -> str:
    group = command.group or ALL_GROUP
    env = run.where.policy.environments[command.environment]
    if not env.gated:
        return (f"❌ {command.environment} is an entry environment: a train carries what "
                "holds evidence in the environment before it, so name an environment with "
                "`after:`.")

    async def candidate_for(service: str, tag: str | None, digest: str) -> Candidate:
        return await run.candidate(service, digest, tag, "command")

    result = await promote_group(run.train_opener(), group, command.environment,
                                 requester=run.where.commenter, candidate_for=candidate_for)
    return describe_train(result, group, command.environment)


def unreachable(marker: PromotionMarker, target: str, reachable: list[str]) -> str:
    if target == marker.environment:
        return (f"this PR already promotes {marker.service} {marker.version} to {target}; "
                "`/promote <env>` carries it to an environment after it.")
    after = (f"environments after {marker.environment}: {', '.join(reachable)}" if reachable
             else f"no environment comes after {marker.environment}")
    return (f"{target} does not come after {marker.environment} in the policy, so this PR's "
            f"digest cannot be promoted there from here ({after}).")
