"""`Ops`: the state changes shared by the REST routes and the acting helpers, each with the
webhooks it causes, one family per base class."""

from __future__ import annotations

from .ops_checks import CheckOps
from .ops_deployments import DeploymentOps
from .ops_pulls import PullOps
from .ops_releases import ReleaseOps


class Ops(PullOps, CheckOps, DeploymentOps, ReleaseOps):
    """Every family of state changes, on one world and its webhooks."""
