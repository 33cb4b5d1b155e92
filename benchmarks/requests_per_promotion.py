"""2. GitHub requests per promotion, counted by the emulator, 304s apart, beside the minimum.

The bot runs in this process (`create_app`, like the behaviour tests) so that
`conveyor.pool.wait_idle()` says exactly when a delivery's work is done. While one delivery is
measured, the webhooks its work causes (pull_request, push, check_run...) are held; they are
replayed afterwards, so the bot sees the same stream GitHub would send and its caches are warm
for the next measurement as they would be in production.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bot.promotion.resync.reconcile import resync_installation
from conveyor_emulator.events.webhooks import Delivery

from .counting import (
    AFTER_PR,
    COLD_FILES,
    GATE_AFTER_REVIEW,
    GATE_RERUN,
    RELEASE_TO_PR,
    REPOSITORIES,
    TOKEN,
    Need,
    Tally,
    compare,
    policy_reads,
    tally,
)
from .report import Section
from .wiring import Stage, start_bot, start_stage

GATE = "conveyor/promotion-gate"


def cold_minimum() -> list[Need]:
    """REST's minimum for a release on a fresh bot (the installation's repositories fit one
    page of the list)."""
    return [TOKEN, REPOSITORIES, *policy_reads(), *COLD_FILES, *RELEASE_TO_PR, *AFTER_PR]


async def hold_release(stage: Stage, service: str, version: str) -> tuple[int, list[Delivery]]:
    """Publish the release with webhooks held: (held-from index, its release deliveries)."""
    since = stage.hold()
    await stage.emulator.publish_release(f"acme/{service}", f"v{version}", author="alice")
    return since, [d for d in stage.emulator.deliveries[since:] if d.event == "release"]


async def deliver_alone(stage: Stage, deliveries: Sequence[Delivery], *,
                        same_ids: bool = False, new_ids: bool = False) -> Tally:
    """Send the deliveries (all actions GitHub sends for the event, in order) with the
    webhooks they cause held; the requests made until the bot is idle."""
    assert stage.bot is not None
    stage.emulator.reset_counters()
    for delivery in deliveries:
        guid = delivery.guid if same_ids else (str(uuid.uuid4()) if new_ids else None)
        status = await stage.post(delivery, guid=guid)
        if status >= 300:
            raise RuntimeError(f"the bot answered {status} to {delivery.event}")
    await stage.bot.conveyor.pool.wait_idle()
    return tally(stage.emulator.requests.entries)


async def measure_quiet(stage: Stage) -> Tally:
    """Requests made since the last reset, once everything has settled."""
    await stage.quiesce()
    return tally(stage.emulator.requests.entries)


async def run(quick: bool) -> Section:
    section = Section("2. GitHub requests per promotion (counted by the emulator)")
    stage = await start_stage()
    try:
        await _run(stage, section)
    finally:
        await stage.stop()
    stage = await start_stage()
    try:
        await _idle_without_attestations(stage, section)
    finally:
        await stage.stop()
    return section


async def open_production_pr(stage: Stage, version: str) -> dict[str, Any]:
    """Argo CD reports the staging merge deployed; an SRE asks for production."""
    em = stage.emulator
    staging = next(p for p in em.pulls(stage.repo, state="all")
                   if f" {version} to staging" in p["title"])
    await em.set_status(stage.repo, staging["merge_commit_sha"], "argocd/web-staging", "success")
    await em.comment(stage.repo, staging["number"], "bob", "/promote production")
    await stage.quiesce()
    return next(p for p in em.pulls(stage.repo, state="open")
                if p["title"].endswith("to production"))


async def idle_resync(stage: Stage, *, interval: float = 0.0) -> tuple[Tally, int]:
    """Resyncs until nothing changes, then the measured one; (its requests, services).
    `interval`: seconds the clock moves before each resync.

    The first resync may still change things (it deletes the branches of merged promotions,
    which moves the repository's `pushed_at`), and with many source repositories the first
    passes still read some for the first time (`bot/promotion/resync/release_polls.py`), so resyncs
    run until one makes only `304`s (at least two, at most twenty) before the one measured.
    """
    assert stage.bot is not None
    conveyor = stage.bot.conveyor
    installation_id = stage.demo.installation_id
    gh = await conveyor.ctx.clients.installation(installation_id)
    for settling in range(20):
        stage.emulator.reset_counters()
        stage.clock.advance(interval)
        await resync_installation(conveyor.capabilities.resync, gh, installation_id)
        if (await measure_quiet(stage)).full == 0 and settling >= 1:
            break
    stage.emulator.reset_counters()
    stage.clock.advance(interval)
    await resync_installation(conveyor.capabilities.resync, gh, installation_id)
    idle = await measure_quiet(stage)
    repos = await conveyor.capabilities.policies.load(gh, installation_id)
    services = sum(len(r.policy.services) for r in repos if r.policy is not None)
    return idle, services


def not_304(measured: Tally) -> str:
    found = Counter(f"{m} {p} {s}" for m, p, s in measured.requests if s != 304)
    return ", ".join(f"{n}× {what}" for what, n in sorted(found.items()))


async def _idle_without_attestations(stage: Stage, section: Section) -> None:
    """The same story for an organisation whose CI does not attest its images."""
    await stage.publish_image("web", "1.1.0", attest=False)
    await start_bot(stage)
    await stage.emulator.publish_release("acme/web", "v1.1.0", author="alice")
    await stage.quiesce()
    await open_production_pr(stage, "1.1.0")
    idle, services = await idle_resync(stage)
    section.add(f"idle resync, per service, CI without attestations ({services} services, "
                "1 open gated PR)", f"{idle.total / services:.1f} (total {idle.split()})",
                target="only 304s", ok=idle.full == 0, note=not_304(idle))
    section.data["idle_resync_without_attestations"] = idle.as_dict()


async def _run(stage: Stage, section: Section) -> None:
    em = stage.emulator
    await stage.publish_image("web", "1.1.0")
    since, first = await hold_release(stage, "web", "1.1.0")
    await start_bot(stage, forward=False)
    em.reset_counters()  # GET /app at start-up is once per process, not per promotion

    minimum = cold_minimum()
    cold = await deliver_alone(stage, first)
    cold_cmp = compare(cold, minimum)
    cold_registry = len(em.registry.requests.entries)
    section.add("release → entry-environment PR, cold caches (fresh bot)",
                f"{cold.split()}; registry {cold_registry}",
                target=f"≤ minimum {len(minimum)} + 2", ok=cold.total <= len(minimum) + 2,
                note=cold_cmp.describe())
    duplicate = await deliver_alone(stage, first, same_ids=True)
    section.add("duplicate delivery (same X-GitHub-Delivery)", duplicate.split(), target="0",
                ok=duplicate.total == 0)
    em.reset_counters()
    await stage.replay_held(since)
    cascade_first = await measure_quiet(stage)

    await stage.publish_image("web", "1.2.0")
    await stage.quiesce()
    since, second = await hold_release(stage, "web", "1.2.0")
    warm_minimum = [*RELEASE_TO_PR, *AFTER_PR]
    warm = await deliver_alone(stage, second)
    warm_cmp = compare(warm, warm_minimum)
    warm_registry = len(em.registry.requests.entries)
    section.add("release → entry-environment PR, warm caches (bot saw a release)",
                f"{warm.split()}; registry {warm_registry}", target=f"minimum {len(warm_minimum)}",
                ok=warm.total <= len(warm_minimum) + 2, note=warm_cmp.describe())
    em.reset_counters()
    await stage.replay_held(since)
    cascade_second = await measure_quiet(stage)
    section.add("… and the webhooks that promotion causes (PR opened, merged, push; gate, "
                "config check, trace, dashboard)", cascade_second.split())
    again = await deliver_alone(stage, second, new_ids=True)
    section.add("the same release again under new delivery ids (idempotent)", again.split())
    await stage.quiesce()

    production = await open_production_pr(stage, "1.2.0")
    em.reset_counters()
    await em.review(stage.repo, production["number"], "bob", "APPROVED")
    gate_review = await measure_quiet(stage)
    section.add("gate evaluation after an approving review (production PR)",
                gate_review.split(), target=f"minimum {len(GATE_AFTER_REVIEW)}",
                note=compare(gate_review, GATE_AFTER_REVIEW).describe())
    run_id = em.check_runs(stage.repo, production["head"]["sha"], GATE)[0]["id"]
    em.reset_counters()
    await em.rerequest_check_run(stage.repo, run_id, user="bob")
    gate_rerun = await measure_quiet(stage)
    section.add("gate re-run, nothing changed (check_run rerequested)", gate_rerun.split(),
                target=f"minimum {len(GATE_RERUN)}, all 304", ok=gate_rerun.full == 0,
                note=compare(gate_rerun, GATE_RERUN).describe())

    idle, services = await idle_resync(stage)
    section.add(f"idle resync, per service ({services} services, 1 open gated PR, dashboard)",
                f"{idle.total / services:.1f} (total {idle.split()})",
                target="only 304s", ok=idle.full == 0, note=not_304(idle))

    section.data = {
        "cold": cold.as_dict(), "cold_minimum": len(minimum),
        "cold_minimum_requests": [f"{m} {p}" for m, p, _ in minimum],
        "cold_vs_minimum": cold_cmp.describe(),
        "duplicate": duplicate.as_dict(),
        "cascade_of_first_release": cascade_first.as_dict(),
        "warm": warm.as_dict(), "warm_minimum": len(warm_minimum),
        "warm_vs_minimum": warm_cmp.describe(),
        "cascade_of_second_release": cascade_second.as_dict(),
        "same_release_new_ids": again.as_dict(),
        "gate_after_review": gate_review.as_dict(),
        "gate_after_review_minimum": len(GATE_AFTER_REVIEW),
        "gate_rerun": gate_rerun.as_dict(), "gate_rerun_minimum": len(GATE_RERUN),
        "idle_resync": idle.as_dict(), "services": services,
    }
