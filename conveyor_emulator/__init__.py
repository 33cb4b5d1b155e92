"""A stateful GitHub emulator: the REST API Conveyor calls, and the webhooks GitHub sends."""

from conveyor_emulator.events.webhooks import Delivery
from conveyor_emulator.faults.requestlog import RequestEntry, RequestLog
from conveyor_emulator.faults.switches import Faults
from conveyor_emulator.served import Emulator

__all__ = ["Delivery", "Emulator", "Faults", "RequestEntry", "RequestLog"]
