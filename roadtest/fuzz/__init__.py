"""Hypothesis for roadtest: what a device may answer (strategies from register maps, device
events), how long and how hard to look (profiles), and the hostile device."""

from roadtest.fuzz.events import DeviceEvent, InterruptChange, Pass, RegisterChange, TransferFails
from roadtest.fuzz.strategies import boundary_ints, device_events, field_values, register_values

__all__ = [
    "DeviceEvent",
    "InterruptChange",
    "Pass",
    "RegisterChange",
    "TransferFails",
    "boundary_ints",
    "device_events",
    "field_values",
    "register_values",
]
