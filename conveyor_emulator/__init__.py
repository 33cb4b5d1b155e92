"""A stateful GitHub emulator: the REST API Conveyor calls, and the webhooks GitHub sends."""

from .faults import Faults
from .requestlog import RequestEntry, RequestLog
from .served import Emulator
from .webhooks import Delivery

__all__ = ["Delivery", "Emulator", "Faults", "RequestEntry", "RequestLog"]
