"""The promotion services of one app, built once in `create_app` on the infrastructure of its
context and handed to every handler and background loop."""

from __future__ import annotations

from dataclasses import dataclass

import cachetools

from bot.promotion.dashboard.status import StatusSources
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.policies import PolicyIndex
from bot.promotion.resync.release_polls import ReleasePolls
from bot.promotion.triggers.flows import Promoter
from bot.promotion.triggers.merging import GateThenMerge
from bot.promotion.watching.delivery_board import DeliveryBoard
from bot.runtime.context import Context

# Tagged images whose package event was handled (its twin event, a redelivery), marked only
# once handled so that a retried job runs again: (image, digest, tag) → True.
HandledImages = cachetools.TTLCache[tuple[str, str, str], bool]


@dataclass(frozen=True)
class Services:
    ctx: Context
    policies: PolicyIndex
    release_polls: ReleasePolls
    gates: GateService
    promoter: Promoter
    status: StatusSources
    delivery: DeliveryBoard
    handled_images: HandledImages

    @classmethod
    def build(cls, ctx: Context) -> Services:
        gates = GateService(ctx)
        return cls(ctx=ctx, policies=PolicyIndex(), release_polls=ReleasePolls(),
                   gates=gates, promoter=Promoter(ctx, GateThenMerge(ctx, gates)),
                   status=StatusSources(ctx), delivery=DeliveryBoard(),
                   handled_images=cachetools.TTLCache(maxsize=10_000, ttl=600))
