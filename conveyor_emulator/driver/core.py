"""`EmulatorCore`: the emulator's state and what it does: seeding, acting as people and CI,
and reading state for assertions. `served.Emulator` serves it over HTTP."""

from __future__ import annotations

from conveyor_emulator.driver.acting import Acting
from conveyor_emulator.driver.reading import Reading
from conveyor_emulator.driver.seeding import Seeding


class EmulatorCore(Seeding, Acting, Reading):
    """A stateful GitHub: its world, faults, webhooks and registry, without a socket."""
