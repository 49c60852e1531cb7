"""Fuzzing what the hardware answers: strategies drawn from register maps, and device events."""

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
