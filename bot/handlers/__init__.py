"""Webhook handlers, one module per event family, bound to the capabilities they use.

Thin: each handler reads the event and calls `bot.promotion`; it may import every promotion
capability, the capabilities record, the runtime and the edges, and nothing imports it but
`bot.serving` and the sandbox. A module declares its handlers (`routes.Declared`) as methods
of a class that holds what they use; `handlers_for` builds each class once from the app's
capabilities.
"""

from __future__ import annotations

from bot.capabilities import Capabilities
from bot.handlers import (
    commands,
    configcheck,
    deployments,
    installations,
    internal,
    packages,
    pulls,
    pushes,
    releases,
    trace,
)
from bot.handlers.routes import Handlers, bind

# The order the handlers of one event run in, but that each runs after those it names in
# `after`: on a push the dashboard is scheduled, the policy re-read, then the push checked;
# on a pull request the dashboard is scheduled, the gate run, then the files checked.
DECLARED = (
    *trace.DECLARED,
    *pushes.DECLARED,
    *pulls.DECLARED,
    *configcheck.DECLARED,
    *commands.DECLARED,
    *deployments.DECLARED,
    *installations.DECLARED,
    *internal.DECLARED,
    *packages.DECLARED,
    *releases.DECLARED,
)


def handlers_for(capabilities: Capabilities) -> Handlers:
    """Every handler bound to what its module uses, in the order of `DECLARED`."""
    c = capabilities
    return Handlers([
        *bind(trace.DECLARED, trace.Tracing(c.dashboards)),
        *bind(pushes.DECLARED, pushes.Pushes(c.policies, c.gates)),
        *bind(pulls.DECLARED, pulls.Pulls(c.policies, c.gates, c.promoter)),
        *bind(configcheck.DECLARED, configcheck.ConfigChecks(c.ctx, c.policies)),
        *bind(commands.DECLARED, commands.Comments(c.policies, c.commands)),
        *bind(deployments.DECLARED, deployments.DeploymentReports(c.policies, c.commands)),
        *bind(installations.DECLARED,
              installations.Installations(c.policies, c.ctx.clients.auth)),
        *bind(internal.DECLARED, internal.Timers(c.ctx, c.policies, c.gates)),
        *bind(packages.DECLARED, packages.Packages(c.packages)),
        *bind(releases.DECLARED, releases.Releases(c.policies, c.promoter)),
    ])
