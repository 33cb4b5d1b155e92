"""Webhook handlers, one module per event family, composed into one router."""

from __future__ import annotations

from gidgethub import routing

from . import (
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


def build_router() -> routing.Router:
    return routing.Router(
        commands.router,
        configcheck.router,
        deployments.router,
        installations.router,
        internal.router,
        packages.router,
        pulls.router,
        pushes.router,
        releases.router,
        trace.router,
    )
