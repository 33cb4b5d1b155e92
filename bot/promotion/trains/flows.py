"""Which trains to open, and when: a group's train from what its upstream environment pins,
the train a merged one sets off in `promote: auto` environments, and the resync's repair of
trains a failed job left half done. Opening one is :class:`TrainOpener`'s job.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gidgethub.abc import GitHubAPI

from bot.domain.promotions.candidate import Candidate, Trigger
from bot.domain.promotions.marker import train_prefix
from bot.domain.tags import version_from_tag
from bot.domain.trains import ALL_GROUP
from bot.github.repos import get_file
from bot.promotion.authorship.trust import ConveyorCommit, trusted_train
from bot.promotion.evidence.finder import pins as pins_digest
from bot.promotion.evidence.halts import halted
from bot.promotion.opening.merger import UnmergedPull
from bot.promotion.opening.opener import MergeAsOpened
from bot.promotion.opening.superseding import close_superseded
from bot.promotion.opening.upstream_pins import agreed_pins
from bot.promotion.policies import DeploymentRepo
from bot.promotion.trains.opener import TrainOpener, TrainResult
from bot.text import short_digest

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

# About 170 services fit one body with one link each (names of a few characters); above this
# the train is refused before any provenance is looked up.
MAX_TRAIN_SERVICES = 200


CandidateFor = Callable[[str, str | None, str], Awaitable[Candidate]]


async def promote_group(opener: TrainOpener, group: str, environment: str, *,
                        requester: str | None, candidate_for: CandidateFor,
                        explicit: bool = True) -> TrainResult:
    """The train of ``group`` (every service for ``all``) into ``environment`` at the digests
    its upstream environment pins now, opened by ``opener`` in its repository;
    ``candidate_for(service, tag, digest)`` tells what is known about each."""
    gh, repo = opener.gh, opener.repo
    policy = repo.policy
    services = (list(policy.services) if group == ALL_GROUP
                else list(policy.groups[group].services))
    upstreams = policy.environments[environment].upstreams
    pins = await agreed_pins(gh, repo, services, environment, opener.ctx.images)
    unpinned = [f"{service} ({pin})" for service, pin in pins.items() if isinstance(pin, str)]
    if unpinned:
        return TrainResult("refused", f"the train takes every service's digest from "
                                      f"{upstreams}, and these have none there: "
                                      f"{'; '.join(unpinned)}")
    live = await already_pinned(gh, repo, pins, environment)
    moving = len(pins) - len(live)
    if moving > MAX_TRAIN_SERVICES:
        return TrainResult("refused", f"a train moves at most {MAX_TRAIN_SERVICES} services "
                                      f"(one pull request body holds them all); {moving} "
                                      "would move: split the group into smaller groups")
    candidates = []
    for service, pin in pins.items():
        if isinstance(pin, str):
            continue
        tag, digest = pin
        # what a service left out is needs no provenance: only those that move are looked up
        candidates.append(plain_candidate(repo, service, tag, digest, requester)
                          if service in live else await candidate_for(service, tag, digest))
    return await opener.open(group, environment, candidates, requester=requester,
                             superseding=services, explicit=explicit)


async def already_pinned(gh: GitHubAPI, repo: DeploymentRepo,
                         pins: dict[str, tuple[str | None, str] | str], environment: str
                         ) -> set[str]:
    """The services whose file in ``environment`` pins their upstream digest already."""
    policy = repo.policy
    texts: dict[str, str | None] = {}
    live = set()
    for service, pin in pins.items():
        if isinstance(pin, str):
            continue
        path = policy.path_for(service, environment)
        if path not in texts:
            found = await get_file(gh, repo.full_name, path)
            texts[path] = found.text if found is not None else None
        settings = policy.services[service]
        tag_keys = (settings.tag_key,) if settings.tag_key else ()
        if pins_digest(texts[path], settings.image, pin[1], path, tag_keys):
            live.add(service)
    return live


def plain_candidate(repo: DeploymentRepo, service: str, tag: str | None, digest: str,
                    requester: str | None) -> Candidate:
    """A candidate from the policy and the pin alone, without lookups."""
    settings = repo.policy.services[service]
    return Candidate(service=service, image=settings.image, digest=digest, tag=tag,
                     version=version_from_tag(tag) if tag else short_digest(digest),
                     source_repo=settings.source, trigger="command", requester=requester)


def known_candidates(repo: DeploymentRepo, train: ConveyorCommit, trigger: Trigger
                     ) -> CandidateFor:
    """Candidates from the policy and what an upstream train's commit says of each digest."""
    moved = {(move.service, move.digest): move for move in train.moved}

    async def candidate_for(service: str, tag: str | None, digest: str) -> Candidate:
        move = moved.get((service, digest))
        return replace(plain_candidate(repo, service, tag, digest, train.requester),
                       trigger=trigger, source_sha=move.source_sha if move else None)

    return candidate_for


async def promote_train_downstream(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                                   train: ConveyorCommit, *, merge: MergeAsOpened
                                   ) -> list[tuple[str, TrainResult]]:
    """A merged train (Conveyor's commit on it) opens the same group's train in each
    `promote: auto` environment after it."""
    policy = repo.policy
    group = train.train
    if group is None or train.rollback or (group != ALL_GROUP and group not in policy.groups):
        return []
    results = []
    moves = [(move.service, move.digest) for move in train.moved]
    opener = TrainOpener(ctx, gh, repo, merge)
    for env in policy.downstream_of(train.environment):
        if env.promote != "auto" or await halted(ctx, gh, repo, env.name, moves):
            continue
        result = await promote_group(opener, group, env.name, requester=train.requester,
                                     candidate_for=known_candidates(repo, train, "upstream"),
                                     explicit=False)
        log.info("downstream train %s", result.action,
                 extra={"env": env.name, "group": group, "pull": result.number,
                        "detail": result.message})
        results.append((env.name, result))
    return results


async def finish_interrupted_trains(ctx: Context, gh: GitHubAPI, repo: DeploymentRepo,
                                    pulls: list[dict[str, Any]]) -> list[UnmergedPull]:
    """Resync, under the repository's lock: of two open trains of one (group, environment),
    the older is closed as superseded (its closing failed when the newer one was opened). The
    trains of ungated `auto_merge` environments still at Conveyor's commit are returned: their
    merge did not happen. What a train is, and whether anyone pushed on it, is read from
    Conveyor's own commit."""
    policy = repo.policy
    newest: dict[tuple[str, str], int] = {}
    trains: list[tuple[dict[str, Any], ConveyorCommit]] = []
    for pr in pulls:
        if "/train-" not in str(pr["head"]["ref"]):
            continue
        found = await trusted_train(gh, repo.full_name, pr, ctx.bot_login)
        if found is None or found[1].rollback:
            continue
        commit = found[1]
        assert commit.train is not None
        if not str(pr["head"]["ref"]).startswith(train_prefix(commit.environment, commit.train)):
            continue
        trains.append((pr, commit))
        key = (commit.train, commit.environment)
        newest[key] = max(newest.get(key, 0), int(pr["number"]))
    unmerged: list[UnmergedPull] = []
    for pr, commit in trains:
        assert commit.train is not None
        winner = newest[(commit.train, commit.environment)]
        if winner != int(pr["number"]):
            await close_superseded(ctx, gh, repo.full_name, pr, winner)
            continue
        env = policy.environments.get(commit.environment)
        if env is None or not env.auto_merge or env.gated or not commit.head:
            continue
        unmerged.append(UnmergedPull(pr, commit.sha, env))
    return unmerged
