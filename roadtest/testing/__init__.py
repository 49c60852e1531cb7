"""The API driver tests use: device declarations, the guest session, sysfs helpers."""

from roadtest.testing.devices import I2CDevice, PlatformDevice, SPIDevice
from roadtest.testing.guestpath import GuestPath, NotNotified, Watch
from roadtest.testing.iio import (
    ScanElement,
    ScanLayout,
    ScanType,
    SysfsTrigger,
    enable_scan_elements,
    scan_elements,
)
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
    "GuestPath",
    "I2CDevice",
    "NotNotified",
    "PlatformDevice",
    "RoadtestSession",
    "SPIDevice",
    "ScanElement",
    "ScanLayout",
    "ScanType",
    "SysfsTrigger",
    "Watch",
    "enable_scan_elements",
    "read_float",
    "read_int",
    "read_str",
    "scan_elements",
    "wait_until",
    "write_float",
    "write_int",
    "write_str",
]
