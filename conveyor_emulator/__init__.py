"""A stateful GitHub emulator: the REST API Conveyor calls, and the webhooks GitHub sends."""

from .emulator import Emulator
from .faults import Faults
from .requestlog import RequestEntry, RequestLog
from .webhooks import Delivery

__all__ = ["Delivery", "Emulator", "Faults", "RequestEntry", "RequestLog"]
