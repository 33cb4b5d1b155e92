"""Background loops of the server process: the resync, the redelivery of failed deliveries and
the hourly read of the delivery figures."""

from __future__ import annotations

import asyncio
import logging

import gidgethub

from bot.github.deliveries import Redeliverer
from bot.promotion.dashboard.issue import refresh_delivery
from bot.promotion.resync.reconcile import resync_all
from bot.runtime.logs import delivery_id_var
from bot.serving.server import Conveyor

log = logging.getLogger(__name__)


def background_tasks(conveyor: Conveyor) -> list[asyncio.Task[None]]:
    interval = conveyor.settings.resync_interval
    if interval <= 0:
        return []
    return [asyncio.create_task(reconcile_forever(conveyor, interval), name="conveyor-resync")]


async def reconcile_once(conveyor: Conveyor, redeliverer: Redeliverer) -> None:
    capabilities = conveyor.capabilities
    ctx = capabilities.ctx
    # Replicas on Redis share the work: one resyncs an installation, one asks for redeliveries
    # (a delivery asked for twice would arrive twice), each holding on to it for the interval.
    keep_for = max(0.0, conveyor.settings.resync_interval - 1.0)
    token = delivery_id_var.set("resync")
    try:
        repos = await resync_all(capabilities.resync, keep_for=keep_for)
        await refresh_delivery(capabilities.dashboards)  # hourly: the figures move slowly
        asked = 0
        async with ctx.leases.lease("redeliver", keep_for=keep_for) as mine:
            if mine:
                asked = await redeliverer.run(ctx.clients.app(), ctx.clock())
        log.info("resync done", extra={"deployment_repos": repos, "redeliveries": asked})
    except (gidgethub.GitHubException, OSError) as exc:
        log.warning("resync failed; next attempt at the next interval",
                    extra={"error": str(exc)})
    finally:
        delivery_id_var.reset(token)


async def reconcile_forever(conveyor: Conveyor, interval: float) -> None:
    redeliverer = Redeliverer()
    while True:
        await reconcile_once(conveyor, redeliverer)
        await asyncio.sleep(interval)
