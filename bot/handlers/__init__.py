"""Webhook handlers, one module per event family, composed into one router.

Thin: each handler reads the policy and calls `bot.promotion`; it may import every promotion
capability, the services, the runtime and the edges, and nothing imports it but `bot.serving`
and the sandbox.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from gidgethub import routing

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

# Of two handlers with the same name, the one whose module comes first here runs first (the
# Router hands them over as a frozenset): `pushes` re-reads a changed policy before
# `configcheck` checks the push with it.
MODULES: tuple[ModuleType, ...] = (
    pushes,
    commands,
    configcheck,
    deployments,
    installations,
    internal,
    packages,
    pulls,
    releases,
    trace,
)
_POSITION = {module.__name__: position for position, module in enumerate(MODULES)}


def build_router() -> routing.Router:
    return routing.Router(*(module.router for module in MODULES))


def run_order(handler: Callable[..., object]) -> tuple[str, int]:
    """Sort key of an event's handlers: by name, then by the module order above."""
    return handler.__qualname__, _POSITION.get(handler.__module__, len(MODULES))
