"""The promotion capabilities of one app, each built once by its constructor in the
composition root (`serving/composition.py`) on the infrastructure of its context, and handed
to the handler modules and background loops that use it."""

from __future__ import annotations

from dataclasses import dataclass

from bot.promotion.commands.command_run import CommandCapabilities
from bot.promotion.dashboard.issue import DashboardCapabilities
from bot.promotion.dashboard.status import StatusSources
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.policies import PolicyIndex
from bot.promotion.resync.reconcile import ResyncCapabilities
from bot.promotion.resync.release_polls import ReleasePolls
from bot.promotion.triggers.flows import Promoter
from bot.promotion.triggers.packages import PackagePromoter
from bot.promotion.watching.delivery_board import DeliveryBoard
from bot.runtime.context import Context


@dataclass(frozen=True)
class Capabilities:
    ctx: Context
    policies: PolicyIndex
    release_polls: ReleasePolls
    gates: GateService
    promoter: Promoter
    status: StatusSources
    delivery: DeliveryBoard
    packages: PackagePromoter
    dashboards: DashboardCapabilities
    commands: CommandCapabilities
    resync: ResyncCapabilities
