"""The API driver tests use: device declarations, the guest session, sysfs helpers."""

from roadtest.testing.devices import I2CDevice, PlatformDevice, SPIDevice
from roadtest.testing.evdev import EvdevDevice, EvdevTimeout, InputEvent, event_node
from roadtest.testing.guestpath import GuestPath, NotNotified, Watch
from roadtest.testing.session import (
    BindError,
    Bound,
    BoundDevice,
    BoundPlatformDevice,
    RoadtestSession,
)
from roadtest.testing.sysfs import read_float, read_int, read_str, write_float, write_int, write_str
from roadtest.testing.waiting import wait_until

__all__ = [
    "BindError",
    "Bound",
    "BoundDevice",
    "BoundPlatformDevice",
    "EvdevDevice",
    "EvdevTimeout",
    "GuestPath",
    "I2CDevice",
    "InputEvent",
    "NotNotified",
    "PlatformDevice",
    "RoadtestSession",
    "SPIDevice",
    "Watch",
    "event_node",
    "read_float",
    "read_int",
    "read_str",
    "wait_until",
    "write_float",
    "write_int",
    "write_str",
]
