"""`Ops`: the state changes shared by the REST routes and the acting helpers, each with the
webhooks it causes, one family per base class."""

from __future__ import annotations

from conveyor_emulator.checks.ops_checks import CheckOps
from conveyor_emulator.checks.ops_deployments import DeploymentOps
from conveyor_emulator.pulls.ops_pulls import PullOps
from conveyor_emulator.releases.ops_releases import ReleaseOps


class Ops(PullOps, CheckOps, DeploymentOps, ReleaseOps):
    """Every family of state changes, on one world and its webhooks."""
