"""`EmulatorCore`: the emulator's state and what it does: seeding, acting as people and CI,
and reading state for assertions. `served.Emulator` serves it over HTTP."""

from __future__ import annotations

from .emulator_acting import Acting
from .emulator_reading import Reading
from .emulator_seeding import Seeding


class EmulatorCore(Seeding, Acting, Reading):
    """A stateful GitHub: its world, faults, webhooks and registry, without a socket."""
